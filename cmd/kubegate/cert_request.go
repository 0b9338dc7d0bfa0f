package main

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/internal/fsutil"
	"github.com/kubegate/kubegate/internal/progress"
	"github.com/kubegate/kubegate/kubeconfig"
)

type certRequestOptions struct {
	kubeconfig, cn, signer, out, name string
	orgs                              []string
	duration, wait                    time.Duration
	force                             bool
}

// minRequestDuration is the shortest spec.expirationSeconds the API
// server accepts.
const minRequestDuration = 10 * time.Minute

func newCertRequestCmd(s streams) *cobra.Command {
	o := &certRequestOptions{}
	cmd := &cobra.Command{
		Use:   "request --kubeconfig FILE --cn NAME [--org GROUP]... --out PREFIX",
		Short: "Get a certificate through the cluster's CSR API, with a key that never leaves this machine",
		Long: `Generate an ECDSA P-256 key here (PREFIX.key, mode 0600), send a
CertificateSigningRequest for it to the API server the kubeconfig reaches,
wait until an administrator approves it (kubectl certificate approve NAME)
and the cluster's signer issues the certificate, then write PREFIX.crt and
PREFIX.conf, a kubeconfig for the kubeconfig's cluster with the new
certificate and key.

Until the certificate is issued the new key is PREFIX.key.new, and the
files of an earlier request that --force replaces are left as they are. A
denied or failed request, none issued within --wait, or an interrupt
(SIGINT, SIGTERM) ends with one line and exit status 1, and removes
PREFIX.key.new.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runCertRequest(ctx, o, s)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the requester; its cluster is the new kubeconfig's")
	fs.StringVar(&o.cn, "cn", "", "common name: the user name the certificate authenticates as")
	fs.StringSliceVar(&o.orgs, "org", nil, "organization: a group the certificate authenticates with (repeatable)")
	fs.StringVar(&o.signer, "signer", certificatesv1.KubeAPIServerClientSignerName, "spec.signerName of the request")
	fs.DurationVar(&o.duration, "duration", 0, "lifetime to ask for (spec.expirationSeconds, at least 10m); default the signer's")
	fs.DurationVar(&o.wait, "wait", 5*time.Minute, "how long to wait for the certificate")
	fs.StringVar(&o.out, "out", "", "prefix of the files to write: PREFIX.key, PREFIX.crt, PREFIX.conf")
	fs.StringVar(&o.name, "name", "", "name of the CertificateSigningRequest (default: the CN and a random suffix)")
	fs.BoolVar(&o.force, "force", false, "replace existing PREFIX.key, PREFIX.crt and PREFIX.conf files")
	return cmd
}

func (o *certRequestOptions) validate() error {
	switch {
	case o.kubeconfig == "":
		return errors.New("--kubeconfig is required")
	case o.cn == "":
		return errors.New("--cn is required")
	case o.out == "":
		return errors.New("--out is required")
	case o.duration != 0 && o.duration < minRequestDuration:
		return fmt.Errorf("--duration %v: at least %v", o.duration, minRequestDuration)
	case o.duration > time.Duration(1<<31-1)*time.Second:
		return fmt.Errorf("--duration %v: too long", o.duration)
	case o.wait <= 0:
		return fmt.Errorf("--wait %v: want a positive duration", o.wait)
	}
	if err := ca.ValidateName("--cn", o.cn); err != nil {
		return err
	}
	for _, g := range o.orgs {
		if g == "" {
			return errors.New("--org: empty group")
		}
		if err := ca.ValidateName("--org", g); err != nil {
			return err
		}
	}
	return nil
}

// usagesFor returns the usages a request for signer asks for: server auth
// for kubelet serving certificates, client auth for every other signer.
func usagesFor(signer string) []certificatesv1.KeyUsage {
	if signer == certificatesv1.KubeletServingSignerName {
		return []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	}
	return []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
}

func runCertRequest(ctx context.Context, o *certRequestOptions, s streams) (err error) {
	if err := o.validate(); err != nil {
		return err
	}
	keyFile, certFile, confFile := o.out+".key", o.out+".crt", o.out+".conf"
	newKeyFile := keyFile + ".new"
	if !o.force {
		if err := mustNotExist(keyFile, certFile, confFile); err != nil {
			return err
		}
	}
	raw, err := kubeconfig.Load(o.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	clusterName, cluster, err := currentCluster(raw, o.kubeconfig)
	if err != nil {
		return err
	}
	restConfig, err := clientcmd.NewDefaultClientConfig(*raw, nil).ClientConfig()
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
	}

	key, keyPEM, err := ca.GenerateKey(ca.ECDSAP256)
	if err != nil {
		return err
	}
	subject, err := ca.EncodeSubject(o.cn, o.orgs)
	if err != nil {
		return fmt.Errorf("--cn %q: %w", o.cn, err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{RawSubject: subject}, key)
	if err != nil {
		return err
	}
	// The key is written before the request is sent, so that a
	// certificate issued for it is never without it, but beside PREFIX.key:
	// the files of an earlier request stay as they are until the new
	// certificate is issued, and PREFIX.key.new is removed when none is.
	// Created exclusively, it keeps a second request for PREFIX from
	// running meanwhile; one left by a request that was killed is not
	// ours to replace.
	if err := fsutil.CreateFile(newKeyFile, keyPEM, fsutil.ModeKey); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if keyOf(newKeyFile, certFile) {
				return fmt.Errorf("%s exists and holds the key of %s: a cert request for %s was stopped before it moved the key into place; move it to %s",
					newKeyFile, certFile, o.out, keyFile)
			}
			return fmt.Errorf("%s exists: another kubegate cert request for %s is running, or one was stopped; remove the file once none runs", newKeyFile, o.out)
		}
		return err
	}
	keep := false
	defer func() {
		if !keep {
			os.Remove(newKeyFile)
		}
	}()

	name := o.name
	if name == "" {
		name = requestName(o.cn)
	}
	interrupted := func(err error) error {
		if ctx.Err() != nil {
			return fmt.Errorf("certificate request %s was interrupted before a certificate was issued; nothing was written", name)
		}
		return err
	}
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: o.signer,
			Usages:     usagesFor(o.signer),
		}}
	if o.duration > 0 {
		secs := int32(o.duration / time.Second)
		csr.Spec.ExpirationSeconds = &secs
	}
	created, err := client.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{})
	if err != nil {
		return interrupted(fmt.Errorf("create certificate signing request %s: %w", name, err))
	}
	fmt.Fprintf(s.err, "waiting for approval: kubectl certificate approve %s\n", name)

	// On a terminal, a spinner with the time waited and what for.
	spinner := progress.New(s.err)
	certPEM, err := waitForCertificate(ctx, client, created, o.wait, spinner.Spin)
	spinner.Done()
	if err != nil {
		return interrupted(err)
	}
	cert, err := ca.ParseCertPEM(name, certPEM)
	if err != nil {
		return fmt.Errorf("certificate request %s: the issued certificate: %w", name, err)
	}
	if !ca.KeyMatches(key, cert.PublicKey) {
		return fmt.Errorf("certificate request %s: the issued certificate is not for the key this request sent", name)
	}
	cfg, err := kubeconfig.Build(kubeconfig.Options{ClusterName: clusterName, Server: cluster.Server,
		CAPEM: cluster.CertificateAuthorityData, UserName: o.cn, CertPEM: certPEM, KeyPEM: keyPEM})
	if err != nil {
		return err
	}
	cfg.Clusters[clusterName] = cluster
	if !o.force {
		if err := mustNotExist(keyFile, certFile, confFile); err != nil {
			return err
		}
	}
	// Only now are the three files replaced, each atomically; a signal
	// that comes meanwhile no longer stops the command. The kubeconfig
	// goes first, as it holds the certificate and the key together; then
	// the certificate; the key last, so that until then PREFIX.key.new
	// holds it and a failed step leaves a pair that belongs together, or
	// says what to move where.
	if err := kubeconfig.Write(confFile, cfg, o.force); err != nil {
		return fmt.Errorf("certificate request %s: %w; %s, %s and %s are unchanged", name, err, keyFile, certFile, confFile)
	}
	if err := fsutil.WriteFile(certFile, certPEM, fsutil.ModePublic, o.force); err != nil {
		return fmt.Errorf("certificate request %s: %w; %s holds the new certificate and key, %s and %s are unchanged", name, err, confFile, certFile, keyFile)
	}
	if err := os.Rename(newKeyFile, keyFile); err != nil {
		keep = true
		return fmt.Errorf("certificate request %s: %s and %s hold the new certificate, but %s could not be replaced: %w; the new key is %s: move it to %s",
			name, confFile, certFile, keyFile, err, newKeyFile, keyFile)
	}
	keep = true
	if err := fsutil.SyncDir(filepath.Dir(keyFile)); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "wrote %s, %s and %s for %s (valid until %s)\n", keyFile, certFile, confFile,
		ca.SubjectString(cert.RawSubject), cert.NotAfter.UTC().Format(time.RFC3339))
	return nil
}

// keyOf reports whether keyFile, a regular file (a link is not
// followed), holds the private key of the certificate in certFile: what a
// request stopped between replacing PREFIX.crt and moving PREFIX.key.new
// into place leaves.
func keyOf(keyFile, certFile string) bool {
	fi, err := os.Lstat(keyFile)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(keyFile)
	if err != nil {
		return false
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !os.SameFile(fi, opened) {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return false
	}
	key, err := ca.ParseKeyPEM(keyFile, data)
	if err != nil {
		return false
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return false
	}
	cert, err := ca.ParseCertPEM(certFile, certPEM)
	return err == nil && ca.KeyMatches(key, cert.PublicKey)
}

// currentCluster returns the cluster of the kubeconfig's current context,
// its CA file (if any) read into certificate-authority-data so that the
// new kubeconfig stands on its own.
func currentCluster(cfg *clientcmdapi.Config, path string) (string, *clientcmdapi.Cluster, error) {
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return "", nil, fmt.Errorf("--kubeconfig %s: no current context", path)
	}
	c, ok := cfg.Clusters[ctx.Cluster]
	if !ok {
		return "", nil, fmt.Errorf("--kubeconfig %s: context %q names cluster %q, which it does not have", path, cfg.CurrentContext, ctx.Cluster)
	}
	c = c.DeepCopy()
	if c.CertificateAuthority != "" && len(c.CertificateAuthorityData) == 0 {
		data, err := os.ReadFile(c.CertificateAuthority)
		if err != nil {
			return "", nil, fmt.Errorf("--kubeconfig %s: cluster %q: %w", path, ctx.Cluster, err)
		}
		c.CertificateAuthorityData = data
	}
	c.CertificateAuthority = ""
	c.LocationOfOrigin = ""
	return ctx.Cluster, c, nil
}

// requestName names a request after its CN, as far as the CN's characters
// fit a name, with a random suffix: "jane-x7k2p".
func requestName(cn string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(cn) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	base := strings.Trim(b.String(), "-.")
	if len(base) > 40 {
		base = strings.Trim(base[:40], "-.")
	}
	if base == "" {
		base = "csr"
	}
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	suffix := make([]byte, 5)
	for i := range suffix {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(letters))))
		suffix[i] = letters[n.Int64()]
	}
	return base + "-" + string(suffix)
}

// waitForCertificate watches the request until it is issued, denied or
// failed, or limit has passed, telling waiting what it waits for: the
// approval, then the signer.
func waitForCertificate(ctx context.Context, client kubernetes.Interface, csr *certificatesv1.CertificateSigningRequest, limit time.Duration,
	waiting func(what string)) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	name := csr.Name
	waiting(fmt.Sprintf("waiting for approval of %s", name))
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (runtime.Object, error) {
			options.FieldSelector = selector
			return client.CertificatesV1().CertificateSigningRequests().List(ctx, options)
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			options.FieldSelector = selector
			return client.CertificatesV1().CertificateSigningRequests().Watch(ctx, options)
		},
	}
	var certPEM []byte
	_, err := watchtools.UntilWithSync(ctx, lw, &certificatesv1.CertificateSigningRequest{}, nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("certificate request %s was deleted", name)
		}
		c, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
		if !ok || c.UID != csr.UID {
			return false, nil
		}
		for _, cond := range c.Status.Conditions {
			switch cond.Type {
			case certificatesv1.CertificateApproved:
				if len(c.Status.Certificate) == 0 {
					waiting(fmt.Sprintf("%s is approved; waiting for %s to sign it", name, c.Spec.SignerName))
				}
			case certificatesv1.CertificateDenied:
				return false, fmt.Errorf("certificate request %s was denied: %s: %s", name, cond.Reason, cond.Message)
			case certificatesv1.CertificateFailed:
				return false, fmt.Errorf("certificate request %s failed: %s: %s", name, cond.Reason, cond.Message)
			}
		}
		if len(c.Status.Certificate) > 0 {
			certPEM = c.Status.Certificate
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("certificate request %s was not issued within %v (approve it with kubectl certificate approve %s)", name, limit, name)
		}
		return nil, err
	}
	return certPEM, nil
}
