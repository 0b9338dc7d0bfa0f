// Command openapimarkers writes the facts kube's OpenAPI generator reads
// from comment markers in the API types' source, which reflection cannot
// see: the enums (a string type marked +enum, its values the constants of
// that type, each described by its doc comment) and the fields whose
// +optional or +required marker overrides what their omitempty says. It
// parses the packages' source as kube-openapi's openapi-gen does and
// writes a Go file of tables for package apiserver.
//
//	go run ./internal/gen/openapimarkers -o apiserver/zz_generated.openapimarkers.go k8s.io/api/core/v1 …
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

func main() {
	out := flag.String("o", "", "the Go file to write")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: openapimarkers -o FILE PACKAGE...")
		os.Exit(2)
	}
	src, err := generate(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "openapimarkers:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "openapimarkers:", err)
		os.Exit(1)
	}
}

// enum is a string type marked +enum and its values.
type enum struct {
	values map[string]string // value: the description of its constant
}

// packageDir returns the directory of a package of the main module's
// build list, and its module's path and version.
func packageDir(pkg string) (dir, module string, err error) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}} {{.Module.Path}}@{{.Module.Version}}", pkg).Output()
	if err != nil {
		return "", "", fmt.Errorf("go list %s: %w", pkg, err)
	}
	dir, module, _ = strings.Cut(strings.TrimSpace(string(out)), " ")
	return dir, module, nil
}

func generate(pkgs []string) ([]byte, error) {
	enums := map[string]*enum{}     // "PKG.Type"
	optional := map[string]bool{}   // "PKG.Type.jsonName": optional by its marker
	blankEnd := map[string]string{} // "PKG.Type.jsonName": the field's type, "PKG.Type", when its description ends in a blank line
	modules := map[string]bool{}
	consts := map[string]string{} // "PKG.Name": the string constants of the packages read so far
	for _, pkg := range pkgs {
		dir, module, err := packageDir(pkg)
		if err != nil {
			return nil, err
		}
		modules[module] = true
		fset := token.NewFileSet()
		files, err := parseDir(fset, dir)
		if err != nil {
			return nil, err
		}
		// The enum types first: constants may precede their type.
		for _, f := range files {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.TYPE {
					continue
				}
				for _, spec := range gd.Specs {
					ts := spec.(*ast.TypeSpec)
					doc := ts.Doc
					if doc == nil && !gd.Lparen.IsValid() {
						doc = gd.Doc
					}
					if id, ok := ts.Type.(*ast.Ident); ok && id.Name == "string" && hasTag(doc, "enum") {
						enums[pkg+"."+ts.Name.Name] = &enum{values: map[string]string{}}
					}
					if st, ok := ts.Type.(*ast.StructType); ok {
						fieldMarkers(pkg, ts.Name.Name, st, optional, blankEnd)
					}
				}
			}
		}
		for _, f := range files {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					doc := vs.Doc
					if doc == nil && !gd.Lparen.IsValid() {
						doc = gd.Doc
					}
					for i, name := range vs.Names {
						if i >= len(vs.Values) {
							continue
						}
						// A typed constant (T = "v"), or a conversion
						// (T("v"), T(pkg.Const)) of an enum type.
						typ, value := vs.Type, vs.Values[i]
						if call, ok := value.(*ast.CallExpr); ok && typ == nil && len(call.Args) == 1 {
							typ, value = call.Fun, call.Args[0]
						}
						v, ok, err := constValue(value, f, consts)
						if err != nil {
							return nil, err
						}
						if !ok {
							continue
						}
						id, isIdent := typ.(*ast.Ident)
						if isIdent {
							consts[pkg+"."+name.Name] = v
						}
						if e := enums[pkg+"."+identName(id)]; isIdent && e != nil {
							addValue(e, v, name.Name, doc)
						}
					}
				}
			}
		}
	}
	return render(pkgs, sortedKeys(modules), enums, optional, blankEnd)
}

func identName(id *ast.Ident) string {
	if id == nil {
		return ""
	}
	return id.Name
}

// constValue is the string value of a constant's expression: a string
// literal, or a constant of a package read before (pkg.Name, by f's
// imports).
func constValue(x ast.Expr, f *ast.File, consts map[string]string) (string, bool, error) {
	switch x := x.(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false, nil
		}
		v, err := strconv.Unquote(x.Value)
		return v, err == nil, err
	case *ast.SelectorExpr:
		pkgID, ok := x.X.(*ast.Ident)
		if !ok {
			return "", false, nil
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			name := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			if name == pkgID.Name {
				v, ok := consts[path+"."+x.Sel.Name]
				return v, ok, nil
			}
		}
	}
	return "", false, nil
}

func parseDir(fset *token.FileSet, dir string) ([]*ast.File, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// commentLines are a comment's lines as gengo reads them.
func commentLines(doc *ast.CommentGroup) []string {
	if doc == nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(doc.Text(), "\n"), "\n")
}

// hasTag reports whether doc has the marker +tag (or +tag=…), as gengo's
// ExtractCommentTags finds it.
func hasTag(doc *ast.CommentGroup, tag string) bool {
	for _, l := range commentLines(doc) {
		l = strings.TrimSpace(l)
		if k, ok := strings.CutPrefix(l, "+"); ok {
			k, _, _ = strings.Cut(k, "=")
			if k == tag {
				return true
			}
		}
	}
	return false
}

var whitespace = regexp.MustCompile(`\s+`)

// addValue adds a constant's value to e with the description
// kube-openapi gives it: its comment without its leading name, on one line;
// of two constants with the same value the longer comment wins.
func addValue(e *enum, value, name string, doc *ast.CommentGroup) {
	comment := strings.TrimSpace(strings.Join(commentLines(doc), " "))
	if old, ok := e.values[value]; ok && len(old) >= len(comment) {
		return
	}
	comment = strings.TrimSpace(strings.TrimPrefix(comment, name))
	e.values[value] = whitespace.ReplaceAllString(comment, " ")
}

// fieldMarkers records the fields of st whose +optional or +required marker
// says otherwise than their json tag's omitempty.
func fieldMarkers(pkg, typeName string, st *ast.StructType, optional map[string]bool, blankEnd map[string]string) {
	typeName = pkg + "." + typeName
	for _, f := range st.Fields.List {
		// an embedded struct with a json name is a field too
		if f.Tag == nil {
			continue
		}
		tag, _ := strconv.Unquote(f.Tag.Value)
		name, opts, _ := strings.Cut(reflect.StructTag(tag).Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		omitempty := false
		for _, o := range strings.Split(opts, ",") {
			omitempty = omitempty || o == "omitempty"
		}
		marked, opt := false, false
		switch {
		case hasTag(f.Doc, "required"):
			marked = true
		case hasTag(f.Doc, "optional"):
			marked, opt = true, true
		}
		if marked && opt != omitempty {
			optional[typeName+"."+name] = opt
		}
		ft := f.Type
		if star, ok := ft.(*ast.StarExpr); ok {
			ft = star.X
		}
		if id, ok := ft.(*ast.Ident); ok && endsInBlankLine(f.Doc) {
			blankEnd[typeName+"."+name] = pkg + "." + id.Name
		}
	}
}

// endsInBlankLine reports whether the last of doc's lines that is not a
// marker is empty: kube-openapi then keeps a paragraph break at the end
// of the field's description, which shows before an enum's values.
func endsInBlankLine(doc *ast.CommentGroup) bool {
	lines := commentLines(doc)
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "+") {
			return l == "" && i > 0
		}
	}
	return false
}

func render(pkgs, modules []string, enums map[string]*enum, optional map[string]bool, blankEnd map[string]string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by internal/gen/openapimarkers from %s; DO NOT EDIT.\n\n", strings.Join(modules, ", "))
	fmt.Fprintf(&b, "package apiserver\n\n")
	fmt.Fprintf(&b, "// openAPIEnums are the types marked +enum in %s,\n", strings.Join(pkgs, ", "))
	fmt.Fprintf(&b, "// by package path and name: their values, sorted, and the lines describing them.\n")
	fmt.Fprintf(&b, "var openAPIEnums = map[string]openAPIEnum{\n")
	for _, name := range sortedKeys(enums) {
		e := enums[name]
		if len(e.values) == 0 {
			continue
		}
		values := sortedKeys(e.values)
		var lines []string
		for _, v := range values {
			lines = append(lines, strings.TrimRight(fmt.Sprintf(" - `%q` %s", v, e.values[v]), " "))
		}
		sort.Strings(lines)
		fmt.Fprintf(&b, "\t%q: {\n\t\tvalues: %#v,\n\t\tlines: %#v,\n\t},\n", name, values, lines)
	}
	fmt.Fprintf(&b, "}\n\n")
	fmt.Fprintf(&b, "// openAPIMarkedOptional are the fields, by package path, type and json\n")
	fmt.Fprintf(&b, "// name, whose +optional (true) or +required (false) marker says\n")
	fmt.Fprintf(&b, "// otherwise than their omitempty.\n")
	fmt.Fprintf(&b, "var openAPIMarkedOptional = map[string]bool{\n")
	for _, name := range sortedKeys(optional) {
		fmt.Fprintf(&b, "\t%q: %t,\n", name, optional[name])
	}
	fmt.Fprintf(&b, "}\n\n")
	fmt.Fprintf(&b, "// openAPIEnumAfterBlank are the fields, by package path, type and json\n")
	fmt.Fprintf(&b, "// name, of an enum type whose comment ends in a blank line before its\n")
	fmt.Fprintf(&b, "// markers: their description keeps one more line break before the enum's values.\n")
	fmt.Fprintf(&b, "var openAPIEnumAfterBlank = map[string]bool{\n")
	for _, name := range sortedKeys(blankEnd) {
		if e := enums[blankEnd[name]]; e != nil && len(e.values) > 0 {
			fmt.Fprintf(&b, "\t%q: true,\n", name)
		}
	}
	fmt.Fprintf(&b, "}\n")
	return format.Source(b.Bytes())
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
