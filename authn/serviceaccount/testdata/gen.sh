#!/bin/sh
# Regenerates the openssl-made fixtures used by openssl_test.go:
#   sa.key / sa.pub     RSA 2048 pair as `openssl genrsa` and `-pubout` write them
#   ec.key              P-256 key with its EC PARAMETERS block (`ecparam -genkey`)
#   ec.crt              self-signed certificate for ec.key
#   rs256.jwt           a bound token signed by openssl itself (RS256), so the
#                       verifier is checked against a second implementation
# Run from this directory: sh gen.sh
set -eu
openssl genrsa -out sa.key 2048 2>/dev/null
openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
openssl ecparam -name prime256v1 -genkey -out ec.key
openssl req -new -x509 -key ec.key -subj /CN=sa-signer -days 36500 -out ec.crt

b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
header=$(printf '{"alg":"RS256"}' | b64url)
# iat/nbf 2030-06-01T13:00:00Z, exp one hour later.
payload=$(printf '%s' '{"aud":["https://kubernetes.default.svc.cluster.local"],"exp":1906552800,"iat":1906549200,"iss":"https://kubernetes.default.svc.cluster.local","jti":"0d6b7a4e-5f1c-4a53-9c63-0b8f7f1e2a10","kubernetes.io":{"namespace":"kube-system","pod":{"name":"coredns-0","uid":"pod-uid-1"},"serviceaccount":{"name":"coredns","uid":"sa-uid-1"}},"nbf":1906549200,"sub":"system:serviceaccount:kube-system:coredns"}' | b64url)
sig=$(printf '%s.%s' "$header" "$payload" | openssl dgst -sha256 -sign sa.key | b64url)
printf '%s.%s.%s' "$header" "$payload" "$sig" > rs256.jwt
