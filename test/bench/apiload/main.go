// Command apiload is the load program of test/bench/apiserver.sh. Against
// one running API server, as the kubeconfig's user, with client-go clients
// speaking protobuf, it
//
//  1. creates -pods pods in -namespace with -fill-clients concurrent
//     clients, every client on its own connection unless -share-conn;
//  2. times -lists full LISTs of them in JSON and as many in protobuf,
//     alternating, offering gzip as client-go does (-list-gzip);
//  3. reads the resident memory of the -pids processes;
//  4. creates pods in NAMESPACE-create with each -clients count of
//     concurrent clients, for -create-for or -create-max pods each,
//     whichever comes first;
//  5. starts -watchers watches on -namespace's pods, each on its own
//     connection, creates -watch-events pods there -watch-interval apart,
//     and measures from each create's response to each watcher's ADDED
//     event.
//
// Around every phase and the whole, it reads the -pids processes' CPU time
// and the machine's stolen and idle CPU time from /proc. It prints one
// JSON line (see result) and exits 1 if any request failed or a watcher
// missed an event. With -kind cr the objects are custom resources of
// crd.yaml's definition, which it applies first and waits on until
// Established, created with the dynamic client and listed in JSON only,
// without the watch phase. With -report FILE it instead reads such lines and
// prints the medians per system and the ratios to -ref.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// intList is a comma-separated list of positive whole numbers.
type intList []int

func (l *intList) String() string {
	s := make([]string, len(*l))
	for i, n := range *l {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func (l *intList) Set(v string) error {
	*l = nil
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("%q: want positive whole numbers, comma-separated", v)
		}
		*l = append(*l, n)
	}
	return nil
}

func realMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apiload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := config{clients: intList{16, 64}, log: stderr}
	var (
		pids                  intList
		procRoot, report, ref string
		stealMax              float64
		createMax, pods       int
	)
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "kubeconfig of the clients (admin.conf)")
	fs.StringVar(&cfg.bootstrap, "bootstrap-kubeconfig", "", "kubeconfig (super-admin.conf) that first binds kubeadm:cluster-admins to cluster-admin, as kubeadm init does")
	fs.StringVar(&cfg.namespace, "namespace", "bench", "namespace of the listed and watched pods; NAMESPACE-create gets the timed creates; both are created with their default service account")
	fs.StringVar(&cfg.system, "system", "", "system name recorded in the result")
	fs.StringVar(&cfg.kind, "kind", kindPods, "what is created and listed: pods, or cr (custom resources of crd.yaml's definition, applied first; JSON only)")
	fs.IntVar(&cfg.round, "round", 0, "round recorded in the result")
	fs.IntVar(&cfg.attempt, "attempt", 0, "attempt recorded in the result (0 the first)")
	fs.Var((*intList)(&cfg.clients), "clients", "concurrent clients of each timed create phase, comma-separated")
	fs.DurationVar(&cfg.createFor, "create-for", 10*time.Second, "longest timed create phase")
	fs.IntVar(&createMax, "create-max", 6000, "most pods one timed create phase creates")
	fs.IntVar(&pods, "pods", 10000, "pods in the namespace when it is listed")
	fs.IntVar(&cfg.fillClients, "fill-clients", 64, "concurrent clients that create the -pods pods")
	fs.IntVar(&cfg.lists, "lists", 5, "timed LISTs of every pod, per content type")
	fs.BoolVar(&cfg.listGzip, "list-gzip", true, "offer gzip on LISTs, as client-go does")
	fs.IntVar(&cfg.watchers, "watchers", 100, "concurrent watchers in the fan-out phase (0 skips it)")
	fs.IntVar(&cfg.watchEvents, "watch-events", 100, "pods created while the watchers watch")
	fs.DurationVar(&cfg.watchInterval, "watch-interval", 20*time.Millisecond, "time between two of those creates")
	fs.DurationVar(&cfg.watchTimeout, "watch-timeout", 30*time.Second, "how long watchers may take to see every pod after the last create")
	fs.DurationVar(&cfg.readyTimeout, "ready-timeout", 2*time.Minute, "how long to wait for /readyz")
	fs.BoolVar(&cfg.shareConn, "share-conn", false, "put every client on one connection, as goroutines of one client-go process share it")
	fs.Var(&pids, "pids", "server processes whose CPU time and memory are measured, comma-separated")
	fs.IntVar(&cfg.procs.ClkTck, "clk-tck", 100, "clock ticks per second of /proc/PID/stat (getconf CLK_TCK)")
	fs.StringVar(&procRoot, "proc", "/proc", "where the proc file system is mounted")
	fs.Float64Var(&cfg.busyMax, "busy-max", 25, "CPU busy percentage above which the run waits for quiet")
	fs.DurationVar(&cfg.quietWait, "quiet-wait", 10*time.Second, "longest wait for quiet before running anyway")
	fs.StringVar(&report, "report", "", "summarise the JSON lines in this file instead of running")
	fs.StringVar(&ref, "ref", "kube", "with -report: the system the others are compared with")
	fs.Float64Var(&stealMax, "steal-max", -1, "with -report: leave out runs with more CPU stolen than this percentage, unless all of a system's were; negative keeps every run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "apiload: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if report != "" {
		return runReport(report, ref, stealMax, stdout, stderr)
	}
	switch {
	case cfg.kubeconfig == "":
		fmt.Fprintln(stderr, "apiload: -kubeconfig is required")
		return 2
	case len(pids) == 0:
		fmt.Fprintln(stderr, "apiload: -pids is required: the server processes to measure")
		return 2
	case pods < 1 || createMax < 1 || cfg.fillClients < 1 || cfg.lists < 1 || cfg.watchers < 0 || cfg.watchEvents < 0:
		fmt.Fprintln(stderr, "apiload: -pods, -create-max, -fill-clients and -lists must be positive; -watchers and -watch-events not negative")
		return 2
	case cfg.kind != kindPods && cfg.kind != kindCR:
		fmt.Fprintf(stderr, "apiload: -kind %q: want pods or cr\n", cfg.kind)
		return 2
	case cfg.kind == kindCR && cfg.watchers > 0:
		fmt.Fprintln(stderr, "apiload: -kind cr has no watch phase: give -watchers 0")
		return 2
	case cfg.createFor <= 0 || cfg.watchInterval <= 0 || cfg.procs.ClkTck < 1:
		fmt.Fprintln(stderr, "apiload: -create-for, -watch-interval and -clk-tck must be positive")
		return 2
	}
	cfg.pods = int64(pods)
	cfg.createMax = int64(createMax)
	cfg.procs.PIDs = pids
	cfg.procs.FS = os.DirFS(procRoot)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := run(ctx, &cfg)
	if err != nil {
		fmt.Fprintf(stderr, "apiload: %s: %v\n", cfg.system, err)
		return 1
	}
	line, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintf(stderr, "apiload: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", line)
	if res.Errors > 0 || res.Watch.Missed > 0 {
		fmt.Fprintf(stderr, "apiload: %s: %d requests failed %v, %d watch events missed\n", cfg.system, res.Errors, res.ErrorKinds, res.Watch.Missed)
		return 1
	}
	return 0
}
