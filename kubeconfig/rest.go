package kubeconfig

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig returns the client configuration of the current context of
// the kubeconfig at path, with client-side rate limiting set to qps and
// burst; a negative qps turns it off. Clients speak protobuf, with JSON
// accepted, as kube-scheduler's and kubelet's do.
func RESTConfig(path string, qps float32, burst int) (*rest.Config, error) {
	cfg, err := Load(path)
	if err != nil {
		return nil, err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	rc.QPS, rc.Burst = qps, burst
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return rc, nil
}
