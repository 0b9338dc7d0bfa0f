package bootstrap_test

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"testing"
)

// The token's secret part is compared with the Secret's only through
// crypto/subtle.ConstantTimeCompare, so the time a refusal takes says
// nothing about how much of a guess was right (A.10). The test reads the
// authenticator's source: every use of the parsed secret in
// AuthenticateToken is either its declaration or an argument of
// subtle.ConstantTimeCompare.
func TestSecretComparedInConstantTime_A10(t *testing.T) {
	t.Parallel()
	fset := gotoken.NewFileSet()
	f, err := parser.ParseFile(fset, "bootstrap.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var fn *ast.FuncDecl
	for _, d := range f.Decls {
		if d, ok := d.(*ast.FuncDecl); ok && d.Name.Name == "AuthenticateToken" {
			fn = d
		}
	}
	if fn == nil {
		t.Fatal("no AuthenticateToken in bootstrap.go")
	}
	inCompare := map[*ast.Ident]bool{}
	compares := 0
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "ConstantTimeCompare" {
			return true
		}
		if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "subtle" {
			return true
		}
		for _, arg := range call.Args {
			ast.Inspect(arg, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok && id.Name == "secret" {
					inCompare[id] = true
					compares++
				}
				return true
			})
		}
		return true
	})
	if compares != 1 {
		t.Fatalf("secret appears in %d ConstantTimeCompare arguments, want 1", compares)
	}
	declared := false
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok && as.Tok == gotoken.DEFINE {
			for _, l := range as.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name == "secret" {
					declared = true
					inCompare[id] = true
				}
			}
		}
		if id, ok := n.(*ast.Ident); ok && id.Name == "secret" && !inCompare[id] {
			t.Errorf("%s: the token's secret is used outside subtle.ConstantTimeCompare", fset.Position(id.Pos()))
		}
		return true
	})
	if !declared {
		t.Error("AuthenticateToken declares no variable named secret; update this test with the code")
	}
}
