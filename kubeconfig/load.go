package kubeconfig

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/homedir"
)

// LoadingRules are kubectl's rules for finding kubeconfigs: explicit (a
// --kubeconfig flag) when it is not empty, else every file in the
// KUBECONFIG list, else ~/.kube/config. The home directory is looked up
// when LoadingRules is called, not when the program starts.
func LoadingRules(explicit string) *clientcmd.ClientConfigLoadingRules {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = explicit
	if os.Getenv(clientcmd.RecommendedConfigPathEnvVar) == "" {
		rules.Precedence = []string{HomePath()}
		// Moving a pre-2015 ~/.kube/.kubeconfig is kubectl's business,
		// not ours.
		rules.MigrationRules = nil
	}
	return rules
}

// HomePath is ~/.kube/config.
func HomePath() string {
	return filepath.Join(homedir.HomeDir(), clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
}

// LoadDefault loads and merges the kubeconfigs LoadingRules(explicit)
// finds, exactly as kubectl does: for each map entry the first file that
// sets it wins, and relative file references are made absolute. A missing
// explicit file is an error; missing KUBECONFIG entries are skipped.
func LoadDefault(explicit string) (*clientcmdapi.Config, error) {
	cfg, err := LoadingRules(explicit).Load()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return cfg, nil
}

// DefaultPath is the file kubectl writes new entries to: explicit when it
// is not empty, else the first existing file of the KUBECONFIG list (its
// first entry if none exists), else ~/.kube/config.
func DefaultPath(explicit string) string {
	return LoadingRules(explicit).GetDefaultFilename()
}
