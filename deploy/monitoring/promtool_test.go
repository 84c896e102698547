package monitoring

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// prometheusBinary returns the path of a program of Prometheus' (prometheus,
// promtool) on PATH; a missing one fails the test, saying how to install it.
func prometheusBinary(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not on PATH (%v): install Prometheus, on Debian or Ubuntu with "+
			"`apt-get install -y prometheus` (then stop the service it starts: `systemctl disable --now prometheus`); .ci/run installs it", name, err)
	}
	return p
}

// TestAlertRulesUnit runs Prometheus' own rule checker and rule unit tests
// (prometheus/opensearchrouted-alerts.test.yaml) on the shipped rules: each
// alert, with the shipped thresholds and for: durations, fires on the
// synthetic series it is for, at the minute it should, with its labels and
// rendered annotations, and not on those it is not for. This is where the
// degraded-node alert is proven (TestDashboardAndAlertsAgainstPrometheus
// has no degraded node to show).
func TestAlertRulesUnit(t *testing.T) {
	bin := prometheusBinary(t, "promtool")
	for _, args := range [][]string{
		{"check", "rules", filepath.Join("prometheus", "opensearchrouted-alerts.yaml")},
		{"test", "rules", filepath.Join("prometheus", "opensearchrouted-alerts.test.yaml")},
	} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
