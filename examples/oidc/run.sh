#!/usr/bin/env bash
# Users of an OpenID provider reach a cluster through kubegate's gateway as
# the identity the provider vouches for. Dex plays the provider: two users
# in different groups, a client for Kubernetes, HTTPS with a certificate
# from the cluster CA. `kubegate up` reads an AuthenticationConfiguration
# (the file kube-apiserver takes with --authentication-config) that maps
# the ID token's claims to a user. Alice logs in, and `kubectl auth whoami`
# through the gateway shows the mapped identity; RBAC on the provider's
# groups lets her read and keeps bob out. Last, the kubeconfig to hand out,
# which logs users in with kubelogin (kubectl oidc-login).
. "$(dirname "$0")/../lib.sh"
# Dex, built from the Go module proxy the first time (a few minutes), then
# found in the Go build cache.
DEX=$("$ROOT/test/oidcprovider/build.sh")
example_init 90
ln -s "$DEX" "$WORK/bin/dex"
PORT=$(free_port)
DEX_PORT=$(free_port)
while [ "$DEX_PORT" = "$PORT" ]; do DEX_PORT=$(free_port); done
API=https://127.0.0.1:$PORT
ISSUER=https://127.0.0.1:$DEX_PORT/dex
CA=cluster/pki/ca.crt
K=(--request-timeout=10s)

step "the cluster PKI, and an HTTPS certificate for the provider from its CA"
run kubegate pki init --dir cluster --server "$API"
run kubegate cert issue --dir cluster --cn dex --profile server --san 127.0.0.1 --out dex

step "Dex: users alice (groups developers, readers) and bob (auditors), and a client \"kubernetes\""
SECRET=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
# The hash is bcrypt's of "password", as in Dex's own example configuration.
HASH='$2a$10$2b2cU8CPhOTaGrs1HRQuAueS7JTT5ZHsHSzYiFPm1leZck7Mc8T4W'
cat >dex.yaml <<EOF
issuer: $ISSUER
storage: {type: memory}
web: {https: 127.0.0.1:$DEX_PORT, tlsCert: dex.crt, tlsKey: dex.key}
oauth2: {passwordConnector: local, skipApprovalScreen: true}
staticClients:
- {id: kubernetes, name: Kubernetes, secret: $SECRET, redirectURIs: ["http://localhost:8000"]}
enablePasswordDB: true
staticPasswords:
- {email: alice@example.com, username: alice, userID: alice-id, hash: "$HASH", groups: [developers, readers]}
- {email: bob@example.com, username: bob, userID: bob-id, hash: "$HASH", groups: [auditors]}
EOF
run_sh 'sed "s/$SECRET/<secret>/" dex.yaml'
background dex.log dex serve dex.yaml
wait_until 30 curl -sf --max-time 5 --cacert "$CA" "$ISSUER/.well-known/openid-configuration"
run_sh 'curl -sS --max-time 10 --cacert $CA $ISSUER/.well-known/openid-configuration | grep -E "\"(issuer|jwks_uri)\""'

step "kubegate up with an authentication config that trusts the provider"
{
	cat <<EOF
apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: $ISSUER
    audiences: [kubernetes]
    certificateAuthority: |
EOF
	sed 's/^/      /' "$CA"
	cat <<'EOF'
  claimMappings:
    username:
      claim: email
      prefix: "oidc:"
    groups:
      claim: groups
      prefix: "oidc:"
    uid:
      claim: sub
    extra:
    - key: example.com/login
      valueExpression: "'dex:' + claims.name"
  userValidationRules:
  - expression: "!user.username.startsWith('system:')"
    message: "the username must not start with system:"
EOF
} >authentication-config.yaml
run_sh "sed '/BEGIN CERT/,/END CERT/c\\      <the PEM of $CA>' authentication-config.yaml"
background up.log kubegate up --dir cluster --secure-port "$PORT" --authentication-config authentication-config.yaml
wait_for_log up.log "kubegate is up" 30
export KUBECONFIG=$PWD/cluster/admin.conf

step "RBAC: the provider's group developers may read configmaps in default"
run kubectl "${K[@]}" create configmap team-settings --from-literal=color=blue
run kubectl "${K[@]}" create role configmap-reader --verb=get,list --resource=configmaps
run kubectl "${K[@]}" create rolebinding developers-read --role=configmap-reader --group=oidc:developers

# login prints the ID token the provider gives USER for the password, with
# the password grant (kubectl oidc-login --grant-type=password does the same).
login() {
	curl -sS --fail --max-time 10 --cacert "$CA" -u "kubernetes:$SECRET" \
		--data-urlencode grant_type=password --data-urlencode "username=$1" --data-urlencode password=password \
		--data-urlencode 'scope=openid email profile groups' "$ISSUER/token" |
		sed -n 's/.*"id_token":"\([^"]*\)".*/\1/p'
}

step "alice logs in and uses her ID token through the gateway"
run_sh 'ALICE=$(login alice@example.com)'
run_sh 'echo "$ALICE" | kubegate cert inspect -'
run_sh 'echo "$ALICE" | kubegate kubeconfig create --user alice --token - --server "$API" --ca $CA --out alice.conf'
run kubectl --kubeconfig alice.conf "${K[@]}" auth whoami
run kubectl --kubeconfig alice.conf "${K[@]}" get configmap team-settings -o jsonpath='{.data.color}{"\n"}'

step "bob (group auditors) is someone else, and may not"
run_sh 'login bob@example.com | kubegate kubeconfig create --user bob --token - --server "$API" --ca $CA --out bob.conf'
run kubectl --kubeconfig bob.conf "${K[@]}" auth whoami
run_expect_fail kubectl --kubeconfig bob.conf "${K[@]}" get configmap team-settings

step "the kubeconfig for users: kubelogin logs them in at the provider"
run kubegate kubeconfig create --oidc-issuer "$ISSUER" --oidc-client-id kubernetes --oidc-client-secret '<secret>' \
	--oidc-extra-scope email --oidc-extra-scope profile --oidc-extra-scope groups \
	--server "$API" --ca "$CA" --out oidc.conf
run_sh "sed -n '/^users:/,\$p' oidc.conf"
