package apiserver

import (
	"strconv"

	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Field checks the API groups of apiserver/registry share, each reporting
// as kube's validation does (D.5).

// NonNegative is kube's ValidateNonnegativeField, for any integer field.
func NonNegative[T int32 | int64](v T, path *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(int64(v), path)
}

// OneOf requires v, a required field, to be one of the supported values,
// as kube reports it: Required when empty, else NotSupported.
func OneOf[T ~string](path *field.Path, v T, supported []T) field.ErrorList {
	if v == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	for _, s := range supported {
		if v == s {
			return nil
		}
	}
	return field.ErrorList{field.NotSupported(path, v, supported)}
}

// DNSLabel checks an optional RFC 1123 label: an empty v passes.
func DNSLabel(path *field.Path, v string) field.ErrorList {
	if v == "" {
		return nil
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(path, v, msg))
	}
	return errs
}

// IntOrPercent is kube's ValidatePositiveIntOrPercent: a count not below
// zero or a valid percentage.
func IntOrPercent(v intstr.IntOrString, path *field.Path) field.ErrorList {
	switch v.Type {
	case intstr.String:
		var errs field.ErrorList
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(path, v, msg))
		}
		return errs
	case intstr.Int:
		return NonNegative(int64(v.IntValue()), path)
	}
	return field.ErrorList{field.Invalid(path, v, "must be an integer or percentage (e.g '5%%')")}
}

// IntOrPercentUpTo100 checks a count or a percentage as IntOrPercent
// does, then, as kube's IsNotMoreThan100Percent, that a percentage is not
// above 100%: a PodDisruptionBudget's minAvailable and maxUnavailable
// (G.12).
func IntOrPercentUpTo100(v intstr.IntOrString, path *field.Path) field.ErrorList {
	errs := IntOrPercent(v, path)
	if pct, ok := Percent(v); ok && pct > 100 {
		errs = append(errs, field.Invalid(path, v, "must not be greater than 100%"))
	}
	return errs
}

// Percent reads a valid percentage ("25%"); false for a count or a
// string that is not one.
func Percent(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(validation.IsValidPercent(v.StrVal)) > 0 {
		return 0, false
	}
	n, _ := strconv.Atoi(v.StrVal[:len(v.StrVal)-1])
	return n, true
}
