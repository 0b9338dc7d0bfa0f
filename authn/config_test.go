package authn_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/tokenfile"
)

// A token removed from a static token file stops working at the next
// reload: static tokens are never served from the token cache.
func TestStaticTokensAreNotCached(t *testing.T) {
	tf, _, err := tokenfile.Parse(strings.NewReader("tok-1,alice,uid-1\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := authn.New(authn.Config{StaticTokens: []authn.Token{tf}, TokenCache: authn.DefaultCacheOptions()})
	try := func() bool {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer tok-1")
		_, ok, _ := a.AuthenticateRequest(r)
		return ok
	}
	if !try() {
		t.Fatal("token in the file was refused")
	}
	if err := tf.Load([]byte("tok-2,bob,uid-2\n")); err != nil {
		t.Fatal(err)
	}
	if try() {
		t.Fatal("a token removed from the file still authenticates")
	}
}
