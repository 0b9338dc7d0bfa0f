// Command oidcissuer serves the benchmark's OpenID issuer on a loopback
// port over TLS (discovery and a JSON Web Key Set with one ES256 key) until
// it is stopped, and writes into -dir what the gateway and the load
// generator need:
//
//	authn.yaml    an AuthenticationConfiguration (--authentication-config)
//	              trusting the issuer: audience kubegate, the user from
//	              "sub" with the prefix "oidc:" (so that the backend sees
//	              which authenticator spoke) and the groups from "groups"
//	oidc.token    an ID token for bench-user in devs, devops, valid for
//	              -ttl; written last, so that its presence means ready
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/kubegate/kubegate/authn/jwt/jwttest"
)

func main() {
	dir := flag.String("dir", "", "directory to write authn.yaml and oidc.token into")
	ttl := flag.Duration("ttl", 24*time.Hour, "lifetime of the token")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "oidcissuer: -dir is required")
		os.Exit(2)
	}
	if err := run(*dir, *ttl); err != nil {
		fmt.Fprintln(os.Stderr, "oidcissuer:", err)
		os.Exit(1)
	}
}

func run(dir string, ttl time.Duration) error {
	key, err := jwttest.GenerateKey("bench", "ES256")
	if err != nil {
		return err
	}
	iss := jwttest.Serve(key)
	defer iss.Server.Close()

	ca := "      " + strings.ReplaceAll(strings.TrimRight(iss.CAPEM(), "\n"), "\n", "\n      ")
	config := fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: %s
    audiences: [kubegate]
    certificateAuthority: |
%s
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
    groups: {claim: groups, prefix: ""}
`, iss.URL, ca)
	now := time.Now()
	token, err := jwttest.SignToken(key, map[string]any{
		"iss": iss.URL, "aud": "kubegate", "sub": "bench-user", "groups": []string{"devs", "devops"},
		"iat": now.Unix(), "exp": now.Add(ttl).Unix(),
	}, nil)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "authn.yaml"), config); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "oidc.token"), token); err != nil {
		return err
	}
	fmt.Printf("issuer %s ready; wrote %s\n", iss.URL, filepath.Join(dir, "authn.yaml"))

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	<-stop
	return nil
}

// writeFile writes data to path through a rename, so that a reader never
// sees a partial file.
func writeFile(path, data string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(data), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
