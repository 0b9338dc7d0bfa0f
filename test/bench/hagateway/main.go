// Command hagateway drives test/bench/ha-gateway.sh: 16 client-go writers
// create ConfigMaps through a proxy in front of two API servers; it kills
// one API server (-kill), waits until the proxy reports it down
// (-health), starts it again (-restart), waits until the proxy reports it
// up, writes a little longer, and prints one JSON line: requests and
// failures in the fault window (in flight from the kill to the
// readmission), the time to eject and the time to readmit.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	server := flag.String("server", "", "proxy URL")
	kubeconfig := flag.String("kubeconfig", "", "admin kubeconfig")
	system := flag.String("system", "", "name printed in the result")
	writers := flag.Int("writers", 16, "concurrent writers")
	before := flag.Duration("before", 5*time.Second, "writing before the kill")
	down := flag.Duration("down", 10*time.Second, "writing with the server down, after it was ejected")
	after := flag.Duration("after", 5*time.Second, "writing after the readmission")
	kill := flag.String("kill", "", "shell command that kills one API server")
	restart := flag.String("restart", "", "shell command that starts it again and returns once it serves")
	health := flag.String("health", "", "shell command that prints UP or DOWN: the proxy's view of that server")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags(*server, *kubeconfig)
	if err != nil {
		fail(err)
	}
	cfg.QPS, cfg.Burst, cfg.Timeout = -1, 0, 15*time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fail(err)
	}
	type outcome struct {
		start, end time.Time
		err        error
	}
	var mu sync.Mutex
	var outs []outcome
	stop := make(chan struct{})
	var wg sync.WaitGroup
	prefix := fmt.Sprintf("%s-%d", *system, time.Now().UnixNano())
	for w := range *writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				_, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(),
					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-%d", prefix, w, n)}}, metav1.CreateOptions{})
				mu.Lock()
				outs = append(outs, outcome{start, time.Now(), err})
				mu.Unlock()
			}
		}()
	}
	state := func() string {
		out, _ := exec.Command("sh", "-c", *health).Output()
		return strings.TrimSpace(string(out))
	}
	waitState := func(want string) time.Time {
		deadline := time.Now().Add(60 * time.Second)
		for state() != want {
			if time.Now().After(deadline) {
				fail(fmt.Errorf("the proxy did not report %s within 60s", want))
			}
			time.Sleep(20 * time.Millisecond)
		}
		return time.Now()
	}
	time.Sleep(*before)
	killed := time.Now()
	if err := exec.Command("sh", "-c", *kill).Run(); err != nil {
		fail(fmt.Errorf("kill: %w", err))
	}
	ejected := waitState("DOWN")
	time.Sleep(*down)
	if out, err := exec.Command("sh", "-c", *restart).CombinedOutput(); err != nil {
		fail(fmt.Errorf("restart: %w: %s", err, out))
	}
	serving := time.Now()
	readmitted := waitState("UP")
	time.Sleep(*after)
	close(stop)
	wg.Wait()

	var inWindow, failedInWindow, total, failed int
	for _, o := range outs {
		total++
		in := !o.end.Before(killed) && o.start.Before(readmitted)
		if in {
			inWindow++
		}
		if o.err != nil {
			failed++
			if in {
				failedInWindow++
			}
		}
	}
	pct := 0.0
	if inWindow > 0 {
		pct = 100 * float64(failedInWindow) / float64(inWindow)
	}
	b, _ := json.Marshal(map[string]any{
		"system": *system, "requests": total, "failed": failed,
		"window_requests": inWindow, "window_failed": failedInWindow, "window_failed_pct": strconv.FormatFloat(pct, 'f', 2, 64),
		"eject_ms": ejected.Sub(killed).Milliseconds(), "readmit_ms": readmitted.Sub(serving).Milliseconds(),
	})
	fmt.Println(string(b))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hagateway:", err)
	os.Exit(1)
}
