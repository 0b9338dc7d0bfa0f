package admissionregistration

import (
	"fmt"
	"regexp"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// The CEL expressions of match conditions, validations, variables, audit
// annotations and mutations are compiled as kube compiles them, with
// k8s.io/apiserver's admission compilers on the base environment of the
// server's compatibility version (D.12). An expression an update keeps
// unchanged compiles in the environment of stored expressions, so that
// what an older server let in stays valid.

// statelessCompiler compiles expressions that cannot use variables.
var statelessCompiler = sync.OnceValue(func() plugincel.Compiler {
	return plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

// newCompiler returns the compiler of one policy: the stateless one, or
// when the policy declares variables (composition) one of its own that
// keeps them.
func newCompiler(composition bool) plugincel.Compiler {
	if !composition {
		return statelessCompiler()
	}
	c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return statelessCompiler()
	}
	return c
}

// envType is the environment an expression compiles in: that of stored
// expressions when the object being updated already had it.
func envType(expression string, stored sets.Set[string]) environment.Type {
	if stored.Has(expression) {
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

// compile compiles an expression and turns a failure into kube's error
// at path.
func compile(c plugincel.Compiler, e plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations, env environment.Type, path *field.Path) field.ErrorList {
	if r := c.CompileCELExpression(e, decls, env); r.Error != nil {
		return field.ErrorList{celError(path, e, r.Error)}
	}
	return nil
}

// celError is kube's field error for a CEL compilation error.
func celError(path *field.Path, e plugincel.ExpressionAccessor, err error) *field.Error {
	if ce, ok := err.(*cel.Error); ok {
		switch ce.Type {
		case cel.ErrorTypeRequired:
			return field.Required(path, ce.Detail)
		case cel.ErrorTypeInvalid:
			return field.Invalid(path, e.GetExpression(), ce.Detail)
		case cel.ErrorTypeInternal:
			return field.InternalError(path, ce)
		}
	}
	return field.InternalError(path, fmt.Errorf("unsupported error type: %w", err))
}

var celIdentifier = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)

// celReserved are the words CEL reserves, which no variable may be named.
var celReserved = []string{"true", "false", "null", "in", "as", "break", "const", "continue", "else",
	"for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while"}

// isCELIdentifier reports whether a variable's name is a CEL identifier.
func isCELIdentifier(name string) bool {
	return celIdentifier.MatchString(name) && !slices.Contains(celReserved, name)
}
