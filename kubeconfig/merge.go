package kubeconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// MergeResult says what Merge changed.
type MergeResult struct {
	Created  bool     // the file did not exist
	Added    []string // entries new to the file, such as `context "a@b"`
	Replaced []string // entries that had the same name, now replaced
	// CurrentContext is the file's current context after the merge: the
	// file's own, or from's when the file had none.
	CurrentContext string
}

// Merge adds every cluster, user and context of from to the kubeconfig at
// path, replacing entries of the same name and leaving every other entry,
// preference and extension as it was. A missing file is created. The
// file's current context is kept; from's is used only when it has none.
//
// The file is written atomically with mode 0600 while holding kubectl's
// lock file (path + ".lock"), so a concurrent `kubectl config` cannot
// interleave with it.
func Merge(path string, from *clientcmdapi.Config) (*MergeResult, error) {
	if err := os.MkdirAll(filepath.Dir(path), fsutil.ModeDir); err != nil {
		return nil, fmt.Errorf("merge into %s: %w", path, err)
	}
	unlock, err := lock(path)
	if err != nil {
		return nil, err
	}
	defer unlock()

	res := &MergeResult{}
	into, err := clientcmd.LoadFromFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		into, res.Created = clientcmdapi.NewConfig(), true
	case err != nil:
		return nil, fmt.Errorf("merge into %s: %w", path, err)
	}
	mergeEntries(res, "cluster", into.Clusters, from.Clusters)
	mergeEntries(res, "user", into.AuthInfos, from.AuthInfos)
	mergeEntries(res, "context", into.Contexts, from.Contexts)
	if into.CurrentContext == "" {
		into.CurrentContext = from.CurrentContext
	}
	res.CurrentContext = into.CurrentContext
	if err := Write(path, into, true); err != nil {
		return nil, err
	}
	return res, nil
}

func mergeEntries[V any](res *MergeResult, kind string, into, from map[string]V) {
	for _, name := range sortedNames(from) {
		entry := fmt.Sprintf("%s %q", kind, name)
		if _, ok := into[name]; ok {
			res.Replaced = append(res.Replaced, entry)
		} else {
			res.Added = append(res.Added, entry)
		}
		into[name] = from[name]
	}
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// lock takes kubectl's lock on the kubeconfig at path: the file
// path + ".lock", created exclusively and removed when done.
func lock(path string) (unlock func(), err error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL, 0)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("kubeconfig %s is being changed by another program (lock file %s exists; remove it if nothing is running)", path, name)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f.Close()
	return func() { os.Remove(name) }, nil
}
