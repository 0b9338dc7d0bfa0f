package ui

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// files returns every file of Static's static/ tree by its name there.
func files(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(Static, "static", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(Static, path)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(path, "static/")] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStaticFilesKeepToTheCSP_K1 holds the console's files to what the
// gateway's Content-Security-Policy allows and K.1 promises: no inline
// script or style, no event-handler attributes, no eval, nothing loaded
// from another origin, and no API that parses a string as markup.
func TestStaticFilesKeepToTheCSP_K1(t *testing.T) {
	all := files(t)
	for _, want := range []string{"index.html", "app.js", "app.css"} {
		if _, ok := all[want]; !ok {
			t.Fatalf("static/%s is missing", want)
		}
	}
	html := all["index.html"]
	for _, m := range regexp.MustCompile(`<script[^>]*>[^<]*</script>`).FindAllString(html, -1) {
		if !strings.Contains(m, ` src="`) || !strings.HasSuffix(m, "></script>") {
			t.Errorf("index.html: %q is an inline script", m)
		}
	}
	if n, m := strings.Count(html, "<script"), len(regexp.MustCompile(`<script[^>]*>[^<]*</script>`).FindAllString(html, -1)); n != m {
		t.Errorf("index.html has %d script tags, %d of them closed at once", n, m)
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`<style`),                                   // an inline style sheet
		regexp.MustCompile(`\sstyle\s*=`),                              // a style attribute
		regexp.MustCompile(`\son[a-z]+\s*=`),                           // an event-handler attribute
		regexp.MustCompile(`(?:src|href)\s*=\s*"(?:https?:)?//[^"]*"`), // another origin
	} {
		for _, m := range re.FindAllString(html, -1) {
			t.Errorf("index.html: %q is not allowed under the console's CSP", m)
		}
	}
	forbidden := []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "localStorage", "document.cookie"}
	imports := regexp.MustCompile(`(?m)^import .* from '([^']+)';$`)
	urls := regexp.MustCompile(`['"](?:https?:)?//[^'"]*['"]`)
	for name, src := range all {
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		for _, f := range forbidden {
			if strings.Contains(src, f) {
				t.Errorf("%s uses %s", name, f)
			}
		}
		for _, m := range urls.FindAllString(src, -1) {
			if m != `'http://www.w3.org/2000/svg'` { // a namespace name, never fetched
				t.Errorf("%s names another origin: %s", name, m)
			}
		}
		for _, m := range imports.FindAllStringSubmatch(src, -1) {
			if _, ok := all[strings.TrimPrefix(m[1], "./")]; !ok || !strings.HasPrefix(m[1], "./") {
				t.Errorf("%s imports %s, which is not one of the console's files", name, m[1])
			}
		}
	}
	if css := all["app.css"]; strings.Contains(css, "@import") || urls.MatchString(css) || strings.Contains(css, "url(") {
		t.Error("app.css loads something")
	}
}
