package authn_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/requestheader"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authn/tokenfile"
	kx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/filewatch"
)

// Example wires kube-apiserver's four authenticators in kube-apiserver's
// order, reloads every file they read when it changes, and uses the result
// in an HTTP handler.
func Example() {
	ctx := context.Background()
	log := slog.Default()
	must := func(err error) {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	read := func(path string) []byte {
		data, err := os.ReadFile(path)
		must(err)
		return data
	}

	x, err := kx509.New(read("pki/ca.crt"), kx509.Options{})
	must(err)
	rhOpts := requestheader.Default()
	rhOpts.AllowedNames = []string{"front-proxy-client"}
	rh, err := requestheader.New(read("pki/front-proxy-ca.crt"), rhOpts)
	must(err)
	tf, err := tokenfile.NewFromFile("tokens.csv")
	must(err)
	sa, err := serviceaccount.NewFromFiles(serviceaccount.Options{Issuers: []string{"https://kubernetes.default.svc"}}, "pki/sa.pub")
	must(err)

	for path, load := range map[string]filewatch.LoadFunc{
		"pki/ca.crt":             x.Load,
		"pki/front-proxy-ca.crt": rh.Load,
		"tokens.csv":             tf.Load,
		"pki/sa.pub":             sa.Load,
	} {
		must(filewatch.Watch(ctx, path, time.Second, load, log))
	}

	c := authn.Config{
		RequestHeader: rh,
		X509:          x,
		StaticTokens:  []authn.Token{tf},
		Tokens:        []authn.Token{sa},
		TokenCache:    authn.DefaultCacheOptions(),
		Anonymous:     true,
	}
	auth, identityHeaders := authn.New(c), c.IdentityHeaders()
	http.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, ok, err := auth.AuthenticateRequest(r)
		if !ok {
			log.Info("unauthorized", "err", err) // errors never carry a credential
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		// Nothing further down sees the credential or identity headers
		// the client sent.
		authn.ClearIdentityHeaders(r.Header, identityHeaders...)
		// Handlers further down read the identity from the context.
		u, _ := authn.UserFrom(authn.WithResponse(r.Context(), resp))
		fmt.Fprintf(w, "hello %s (%s)\n", u.Name, resp.Authenticator)
	}))
}
