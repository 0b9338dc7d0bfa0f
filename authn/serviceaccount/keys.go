package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"os"

	"github.com/kubegate/kubegate/internal/pemutil"
)

// ErrNoKeys is returned when PEM data holds no usable RSA or ECDSA key.
var ErrNoKeys = errors.New("no RSA or ECDSA keys found")

// KeyID returns the key ID kube-apiserver puts in the kid header of tokens
// signed with the private half of pub: the unpadded base64url encoding of
// the SHA-256 of pub's PKIX DER encoding.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("key id: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// ParsePublicKeysPEM returns the public key of every usable PEM block in
// data, in order, as kube-apiserver reads --service-account-key-file. Block
// types are not trusted: each block is tried as an RSA private key (PKCS #1
// or PKCS #8), a PKIX public key, a certificate, and an EC private key
// (SEC 1 or PKCS #8). Blocks that are none of these (EC PARAMETERS, say),
// and keys other than RSA or ECDSA on P-256, P-384 or P-521, are skipped.
// Data with no usable key is an error wrapping ErrNoKeys.
//
// It reads every key client-go's keyutil.ParsePublicKeysPEM (what
// kube-apiserver reads the flag with) reads, and differs from it on
// purpose in two ways: it also reads an EC private key in PKCS #8, the
// form openssl genpkey writes and --service-account-signing-key-file
// accepts, so that the signing key's own file verifies its tokens; and it
// leaves out keys on P-224, which keyutil reads but no JWS algorithm
// verifies with, so that a file of only such keys is refused when it is
// loaded instead of verifying nothing.
func ParsePublicKeysPEM(data []byte) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	for _, block := range pemutil.Blocks(data) {
		if pub := publicKeyFromDER(block.Bytes); pub != nil {
			keys = append(keys, pub)
		}
	}
	if len(keys) == 0 {
		return nil, ErrNoKeys
	}
	return keys, nil
}

// ReadPublicKeysFiles reads and concatenates the keys of every file, in
// order. A file without a usable key is an error naming it.
func ReadPublicKeysFiles(paths ...string) ([]crypto.PublicKey, error) {
	if len(paths) == 0 {
		return nil, errors.New("no service account key files given")
	}
	var all []crypto.PublicKey
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read service account key file: %w", err)
		}
		keys, err := ParsePublicKeysPEM(data)
		if err != nil {
			return nil, fmt.Errorf("service account key file %q: %w", p, err)
		}
		all = append(all, keys...)
	}
	return all, nil
}

// ParsePrivateKeyPEM returns the first RSA or ECDSA private key in data
// (PKCS #1, SEC 1 or PKCS #8), for signing tokens.
//
// Where client-go's keyutil.ParsePrivateKeyPEM (what kube-apiserver reads
// --service-account-signing-key-file with) reads a block only as the key
// its type names, this tries every form on every block; and it skips a key
// no JWS algorithm signs with (Ed25519, P-224) and reads on, where keyutil
// returns it and kube-apiserver then refuses to start.
func ParsePrivateKeyPEM(data []byte) (crypto.Signer, error) {
	for _, block := range pemutil.Blocks(data) {
		if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
			return k, nil
		}
		if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
			if supportedKey(&k.PublicKey) {
				return k, nil
			}
			continue
		}
		if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
			switch k := k.(type) {
			case *rsa.PrivateKey:
				return k, nil
			case *ecdsa.PrivateKey:
				if supportedKey(&k.PublicKey) {
					return k, nil
				}
			}
		}
	}
	return nil, errors.New("no RSA or ECDSA private key found")
}

func publicKeyFromDER(der []byte) crypto.PublicKey {
	var pub crypto.PublicKey
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		pub = &k.PublicKey
	} else if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			pub = s.Public()
		}
	} else if k, err := x509.ParsePKIXPublicKey(der); err == nil {
		pub = k
	} else if c, err := x509.ParseCertificate(der); err == nil {
		pub = c.PublicKey
	} else if k, err := x509.ParseECPrivateKey(der); err == nil {
		pub = &k.PublicKey
	}
	if !supportedKey(pub) {
		return nil
	}
	return pub
}

func supportedKey(pub crypto.PublicKey) bool {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return true
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256(), elliptic.P384(), elliptic.P521():
			return true
		}
	}
	return false
}

// verifyKey is a public key ready for verification.
type verifyKey struct {
	kid string
	pub crypto.PublicKey
	// alg is "RS" for RSA keys, and the one ES algorithm matching an EC
	// key's curve.
	alg string
}

// keySet is one immutable set of verification keys.
type keySet struct {
	keys []verifyKey
}

func newKeySet(pubs []crypto.PublicKey) (*keySet, error) {
	if len(pubs) == 0 {
		return nil, ErrNoKeys
	}
	ks := &keySet{keys: make([]verifyKey, 0, len(pubs))}
	for i, pub := range pubs {
		if !supportedKey(pub) {
			return nil, fmt.Errorf("service account key %d: unsupported key type %T", i, pub)
		}
		kid, err := KeyID(pub)
		if err != nil {
			return nil, fmt.Errorf("service account key %d: %w", i, err)
		}
		vk := verifyKey{kid: kid, pub: pub, alg: "RS"}
		if ec, ok := pub.(*ecdsa.PublicKey); ok {
			vk.alg = ecAlgorithm(ec.Curve)
		}
		ks.keys = append(ks.keys, vk)
	}
	return ks, nil
}

// ecAlgorithm returns the JWS algorithm for a curve, or "" if none.
func ecAlgorithm(c elliptic.Curve) string {
	switch c {
	case elliptic.P256():
		return "ES256"
	case elliptic.P384():
		return "ES384"
	case elliptic.P521():
		return "ES512"
	}
	return ""
}

// accepts reports whether k may verify a signature made with alg.
func (k *verifyKey) accepts(alg string) bool {
	if k.alg == "RS" {
		return alg == "RS256" || alg == "RS384" || alg == "RS512"
	}
	return k.alg == alg
}
