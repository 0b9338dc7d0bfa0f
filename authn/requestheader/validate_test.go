package requestheader_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/authn/requestheader"
)

func TestWarnings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    requestheader.Options
		want []string // fields warned about
	}{
		{name: "A.4 kubeadm's names give no warning", o: requestheader.Default()},
		{name: "A.4 standard names compare case-insensitively", o: requestheader.Options{UsernameHeaders: []string{"x-remote-user"}, UIDHeaders: []string{"X-REMOTE-UID"}, GroupHeaders: []string{"X-Remote-Group"}, ExtraHeaderPrefixes: []string{"x-remote-extra-"}}},
		{name: "A.4 missing standard names are warned about", o: requestheader.Options{UsernameHeaders: []string{"X-Proxy-User"}, GroupHeaders: []string{"X-Remote-Group"}}, want: []string{"UsernameHeaders", "UIDHeaders", "ExtraHeaderPrefixes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.o.Warnings()
			var fields []string
			for _, w := range got {
				fields = append(fields, strings.Fields(w)[0])
				if !strings.Contains(w, "API aggregation will not work") {
					t.Errorf("warning %q does not say why it matters", w)
				}
			}
			if !slices.Equal(fields, tt.want) {
				t.Errorf("warnings %q, want for fields %q", got, tt.want)
			}
		})
	}
}

func TestCheckSharedCA(t *testing.T) {
	t.Parallel()
	p := fixtures(t)
	both := append(append([]byte{}, p.clientCA.CertPEM...), p.frontCA.CertPEM...)
	tests := []struct {
		name          string
		front, client []byte
		allowed       []string
		wantErr       error
	}{
		{name: "A.4 a shared CA without allowed names is refused", front: p.frontCA.CertPEM, client: both, wantErr: requestheader.ErrSharedCA},
		{name: "A.4 a shared CA with allowed names is accepted", front: p.frontCA.CertPEM, client: both, allowed: []string{"front-proxy-client"}},
		{name: "A.4 separate CAs are accepted", front: p.frontCA.CertPEM, client: p.clientCA.CertPEM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := requestheader.CheckSharedCA(tt.front, tt.client, tt.allowed)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}
