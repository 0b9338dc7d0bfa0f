package core

// What the package's tests hold to kube's answers directly, as functions
// of an object.
var (
	SetDisruptionAllowedCondition = setDisruptionAllowedCondition
	DefaultLimitRange             = defaultLimitRange
	ValidateLimitRange            = validateLimitRange
	PrepareLimitRange             = prepareLimitRange
	DefaultPod                    = defaultPod
	ValidatePod                   = validatePod
)
