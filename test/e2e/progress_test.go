package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"

	"github.com/kubegate/kubegate/internal/progress"
)

// onTerminal runs the built kubegate with its standard input, output and
// error on a pseudo-terminal 200 columns wide, with TERM=term, and returns
// everything written to the terminal, the terminal's "\r\n" line ends
// turned back into "\n".
func onTerminal(t *testing.T, term string, args ...string) string {
	t.Helper()
	cmd := exec.Command(kubegateBin, args...)
	cmd.Env = append(kubectlEnv(t), "TERM="+term)
	ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("start kubegate on a pseudo-terminal: %v", err)
		}
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	var out bytes.Buffer
	// Read until the terminal's other end is closed, by the command's
	// exit: Linux then answers EIO.
	_, err = io.Copy(&out, ptmx)
	if err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatalf("read the terminal: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kubegate %s on a terminal: %v\n%q", strings.Join(args, " "), err, out.String())
	}
	return strings.ReplaceAll(out.String(), "\r\n", "\n")
}

// screen is what a terminal shows after raw: the status line's redraws
// (a carriage return and the erase of the line) replace the line's text,
// so only the lines ended by a newline stay.
func screen(raw string) string {
	var lines []string
	var cur strings.Builder
	for i := 0; i < len(raw); i++ {
		switch {
		case strings.HasPrefix(raw[i:], progress.Erase):
			cur.Reset()
			i += len(progress.Erase) - 1
		case raw[i] == '\r':
			cur.Reset() // every carriage return kubegate writes is followed by an erase
		case raw[i] == '\n':
			lines = append(lines, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(raw[i])
		}
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return strings.Join(lines, "\n") + "\n"
}

// issuedLine is cert issue --from-file's last line, with the figures that
// vary from run to run left open.
func issuedLine(n int, dir string) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`^issued %d certificates into %s in \S+ \([0-9]+ certs/s\)\n$`, n, regexp.QuoteMeta(dir)))
}

func TestCertIssueFromFileShowsProgressOnlyOnATerminal(t *testing.T) {
	dir := t.TempDir()
	if res := kubegate(t, "pki", "init", "--dir", dir); res.code != 0 {
		t.Fatalf("pki init: %+v", res)
	}
	const n = 2000
	var users strings.Builder
	for i := range n {
		fmt.Fprintf(&users, "user-%04d,devs\n", i)
	}
	usersFile := filepath.Join(dir, "users.csv")
	if err := os.WriteFile(usersFile, []byte(users.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	issue := func(out string) []string {
		return []string{"cert", "issue", "--dir", dir, "--from-file", usersFile, "--out", filepath.Join(dir, out)}
	}

	raw := onTerminal(t, "xterm-256color", issue("tty")...)
	// The last count is always drawn, however the redraws are throttled,
	// and the line is erased before the summary.
	if want := progress.Erase + fmt.Sprintf("issuing certificates %d/%d (100%%)", n, n); !strings.Contains(raw, want) {
		t.Errorf("the terminal never showed %q:\n%q", want, tail(raw, 2000))
	}
	if want := progress.Erase + fmt.Sprintf("issued %d certificates", n); !strings.Contains(raw, want) {
		t.Errorf("the status line was not erased before the summary:\n%q", tail(raw, 2000))
	}
	if got := screen(raw); !issuedLine(n, filepath.Join(dir, "tty")).MatchString(got) {
		t.Errorf("the terminal ends showing %q, want only the summary line", got)
	}

	piped := kubegate(t, issue("piped")...)
	if piped.code != 0 || piped.stdout != "" {
		t.Fatalf("cert issue piped: %+v", piped)
	}
	if !issuedLine(n, filepath.Join(dir, "piped")).MatchString(piped.stderr) {
		t.Errorf("piped, stderr = %q, want the summary line alone", piped.stderr)
	}

	dumb := onTerminal(t, "dumb", issue("dumb")...)
	if strings.ContainsAny(dumb, "\r\x1b") {
		t.Errorf("with TERM=dumb the terminal got control characters: %q", tail(dumb, 2000))
	}
	if !issuedLine(n, filepath.Join(dir, "dumb")).MatchString(dumb) {
		t.Errorf("with TERM=dumb the terminal shows %q, want the summary line alone", dumb)
	}
}

func TestCertRenewAllShowsProgressOnlyOnATerminal(t *testing.T) {
	dir := t.TempDir()
	if res := kubegate(t, "pki", "init", "--dir", dir); res.code != 0 {
		t.Fatalf("pki init: %+v", res)
	}
	raw := onTerminal(t, "xterm-256color", "cert", "renew", "--dir", dir, "all")
	m := regexp.MustCompile(regexp.QuoteMeta(progress.Erase) + `renewing ([0-9]+)/([0-9]+) \(100%\)`).FindStringSubmatch(raw)
	if m == nil || m[1] != m[2] {
		t.Errorf("the terminal never showed the count of renewals at N/N:\n%q", tail(raw, 2000))
	}
	// The first count is drawn at once, naming the first certificate.
	if !regexp.MustCompile(regexp.QuoteMeta(progress.Erase) + `renewing 0/[0-9]+ \(0%\) \S+`).MatchString(raw) {
		t.Errorf("the terminal never named the certificate being renewed:\n%q", tail(raw, 2000))
	}
	if !strings.HasSuffix(raw, progress.Erase) {
		t.Errorf("the status line is not erased at the end:\n%q", tail(raw, 2000))
	}

	piped := kubegate(t, "cert", "renew", "--dir", dir, "all")
	if piped.code != 0 || piped.stdout != "" {
		t.Fatalf("cert renew piped: %+v", piped)
	}
	if strings.ContainsAny(piped.stderr, "\r\x1b") || !strings.HasPrefix(piped.stderr, "renewed ") {
		t.Errorf("piped, stderr = %q, want the renewed lines alone", piped.stderr)
	}
	// What the terminal shows once done is what the pipe got.
	if got := screen(raw); got != piped.stderr {
		t.Errorf("the terminal shows\n%s\nthe pipe got\n%s", got, piped.stderr)
	}
}
