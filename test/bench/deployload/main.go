// Command deployload is the load program of test/bench/workloads.sh.
// Against one running cluster (API server, controllers, scheduler and
// simulated nodes), as the kubeconfig's user, it
//
//  1. waits for -nodes Ready nodes without the not-ready taint and for the
//     namespace's default service account;
//  2. waits for the machine to be quiet;
//  3. runs `kubectl create deployment NAME --image IMAGE --replicas N`;
//  4. watches the namespace's pods until N of them are Running, noting
//     when N pods existed, when N were bound to a node and when N were
//     Running, counted from just before kubectl started;
//  5. reads the -pids processes' CPU time over steps 3 and 4 and their
//     peak resident memory, and the machine's stolen and idle CPU time,
//     from /proc.
//
// It prints one JSON line (see result) and exits 1 if the pods were not
// all Running within -timeout. With -report FILE it instead reads such
// lines and prints the medians per system and the ratios to the others.
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

// procList is a comma-separated list of NAME=PID: the processes measured.
type procList struct {
	names []string
	pids  []int
}

func (l *procList) String() string {
	s := make([]string, len(l.pids))
	for i := range l.pids {
		s[i] = l.names[i] + "=" + strconv.Itoa(l.pids[i])
	}
	return strings.Join(s, ",")
}

func (l *procList) Set(v string) error {
	*l = procList{}
	for f := range strings.SplitSeq(v, ",") {
		name, p, ok := strings.Cut(strings.TrimSpace(f), "=")
		pid, err := strconv.Atoi(p)
		if !ok || name == "" || err != nil || pid < 1 {
			return fmt.Errorf("%q: want NAME=PID, comma-separated", v)
		}
		l.names = append(l.names, name)
		l.pids = append(l.pids, pid)
	}
	return nil
}

func realMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("deployload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := config{log: stderr}
	var (
		procs    procList
		procRoot string
		report   string
		goal     float64
		goalSys  string
	)
	fs.StringVar(&cfg.kubeconfig, "kubeconfig", "", "kubeconfig of the watcher and of kubectl (admin.conf)")
	fs.StringVar(&cfg.kubectl, "kubectl", "kubectl", "kubectl binary")
	fs.StringVar(&cfg.namespace, "namespace", "default", "namespace of the Deployment")
	fs.StringVar(&cfg.name, "name", "bench", "name of the Deployment")
	fs.StringVar(&cfg.image, "image", "registry.k8s.io/pause:3.10", "image of its pods")
	fs.IntVar(&cfg.replicas, "replicas", 10000, "replicas of the Deployment")
	fs.IntVar(&cfg.nodes, "nodes", 1000, "Ready nodes to wait for before the create")
	fs.StringVar(&cfg.system, "system", "", "system name recorded in the result")
	fs.IntVar(&cfg.round, "round", 0, "round recorded in the result")
	fs.IntVar(&cfg.attempt, "attempt", 0, "attempt recorded in the result (0 the first)")
	fs.DurationVar(&cfg.setupTimeout, "setup-timeout", 5*time.Minute, "how long to wait for the nodes and the service account")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Minute, "how long the pods may take to be Running")
	fs.Var(&procs, "pids", "the system's processes whose CPU time and memory are measured, NAME=PID,…")
	fs.IntVar(&cfg.procs.ClkTck, "clk-tck", 100, "clock ticks per second of /proc/PID/stat (getconf CLK_TCK)")
	fs.StringVar(&procRoot, "proc", "/proc", "where the proc file system is mounted")
	fs.Float64Var(&cfg.busyMax, "busy-max", 25, "CPU busy percentage above which the run waits for quiet")
	fs.DurationVar(&cfg.quietWait, "quiet-wait", 10*time.Second, "longest wait for quiet before running anyway")
	fs.StringVar(&report, "report", "", "summarise the JSON lines in this file instead of running")
	fs.StringVar(&goalSys, "goal-systems", "kubegate,kubegate-split", "with -report: the systems whose times are compared with the others', comma-separated")
	fs.Float64Var(&goal, "goal", 0.5, "with -report: the goal for their times to all Running as a ratio to each other system's")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "deployload: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if report != "" {
		f, err := os.Open(report)
		if err != nil {
			fmt.Fprintf(stderr, "deployload: %v\n", err)
			return 2
		}
		defer f.Close()
		results, err := readResults(f)
		if err != nil {
			fmt.Fprintf(stderr, "deployload: %s: %v\n", report, err)
			return 2
		}
		if err := writeReport(stdout, results, strings.Split(goalSys, ","), goal); err != nil {
			fmt.Fprintf(stderr, "deployload: %v\n", err)
			return 2
		}
		return 0
	}
	switch {
	case cfg.kubeconfig == "":
		fmt.Fprintln(stderr, "deployload: -kubeconfig is required")
		return 2
	case len(procs.pids) == 0:
		fmt.Fprintln(stderr, "deployload: -pids is required: the system's processes to measure")
		return 2
	case cfg.replicas < 1 || cfg.nodes < 0 || cfg.procs.ClkTck < 1 || cfg.timeout <= 0:
		fmt.Fprintln(stderr, "deployload: -replicas, -clk-tck and -timeout must be positive, -nodes not negative")
		return 2
	}
	cfg.procNames = procs.names
	cfg.procs.PIDs = procs.pids
	cfg.procs.FS = os.DirFS(procRoot)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := run(ctx, &cfg)
	rc := 0
	if err != nil {
		fmt.Fprintf(stderr, "deployload: %s: %v\n", cfg.system, err)
		rc = 1
		if res == nil {
			return rc
		}
		res.Error = err.Error()
	}
	line, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintf(stderr, "deployload: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", line)
	return rc
}
