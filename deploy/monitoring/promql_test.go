package monitoring

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// collectorMetrics are the collector's own metrics the dashboard uses
// besides the exporter's (exporterhelper's sending queue).
var collectorMetrics = []string{"otelcol_exporter_queue_size", "otelcol_exporter_queue_capacity"}

// exporterMetrics returns the Prometheus names of the exporter's metrics
// declared in the repository's metadata.yaml, as the collector's Prometheus
// endpoint serves them (checked against a running collector by
// TestDashboardAndAlertsAgainstPrometheus): dots become underscores, no unit
// or _total suffix; a histogram is its _bucket, _sum and _count series.
// base maps each served name to the declared metric's name.
func exporterMetrics(t *testing.T) (base map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		Telemetry struct {
			Metrics map[string]map[string]any `yaml:"metrics"`
		} `yaml:"telemetry"`
	}
	if err := yaml.Unmarshal(b, &md); err != nil {
		t.Fatalf("metadata.yaml: %v", err)
	}
	if len(md.Telemetry.Metrics) == 0 {
		t.Fatal("metadata.yaml declares no telemetry metrics")
	}
	base = map[string]string{}
	for name, m := range md.Telemetry.Metrics {
		prom := strings.ReplaceAll(name, ".", "_")
		if _, ok := m["histogram"]; ok {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				base[prom+s] = name
			}
			continue
		}
		base[prom] = name
	}
	return base
}

var promqlParser = parser.NewParser(parser.Options{})

// metricNames parses expr with Prometheus' PromQL parser and returns the
// metric names its selectors use.
func metricNames(expr string) ([]string, parser.Expr, error) {
	e, err := promqlParser.ParseExpr(expr)
	if err != nil {
		return nil, nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				names = append(names, m.Value)
			}
		}
		if vs.Name != "" && !slices.Contains(names, vs.Name) {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, e, nil
}

// unknownNames returns the names of names that neither the exporter nor
// the collector serve.
func unknownNames(names []string, known map[string]string) []string {
	var bad []string
	for _, n := range names {
		if _, ok := known[n]; !ok && !slices.Contains(collectorMetrics, n) {
			bad = append(bad, n)
		}
	}
	return bad
}

// TestPanelQueriesParse: every query of every dashboard panel, with
// Grafana's variables as Grafana sends them, is a valid PromQL expression
// of an instant vector that selects only metrics the collector serves; and
// every metric of the exporter is on some panel.
func TestPanelQueriesParse(t *testing.T) {
	known := exporterMetrics(t)
	qs, err := PanelQueries()
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 12 {
		t.Fatalf("the dashboard has %d queries", len(qs))
	}
	used := map[string]bool{}
	for _, q := range qs {
		for _, interval := range []string{"1m", "4s"} {
			expr := Expand(q.Expr, interval)
			if strings.Contains(expr, "$") {
				t.Errorf("panel %q %s: a Grafana variable the test does not know: %s", q.Panel, q.RefID, expr)
				continue
			}
			names, e, err := metricNames(expr)
			if err != nil {
				t.Errorf("panel %q %s: %v\n%s", q.Panel, q.RefID, err, expr)
				continue
			}
			if e.Type() != parser.ValueTypeVector {
				t.Errorf("panel %q %s: a %s, not an instant vector: %s", q.Panel, q.RefID, e.Type(), expr)
			}
			if len(names) == 0 {
				t.Errorf("panel %q %s selects no metric by name: %s", q.Panel, q.RefID, expr)
			}
			if bad := unknownNames(names, known); len(bad) > 0 {
				t.Errorf("panel %q %s: metrics the collector does not serve: %v", q.Panel, q.RefID, bad)
			}
			for _, n := range names {
				if b, ok := known[n]; ok {
					used[b] = true
				}
			}
		}
	}
	for _, b := range known {
		if !used[b] {
			t.Errorf("no panel shows %s", b)
		}
	}
}

// TestAlertRulesParse: the rules file is what Prometheus loads (rulefmt,
// Prometheus' own rule file parser and validator, with the PromQL parser),
// each alert's expression selects only metrics the collector serves, and
// each alert has a severity and a summary.
func TestAlertRulesParse(t *testing.T) {
	groups, errs := rulefmt.Parse(AlertRulesYAML, false, model.UTF8Validation, promqlParser, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Errorf("rulefmt: %v", err)
	}
	if len(errs) > 0 {
		return
	}
	known := exporterMetrics(t)
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %s: a recording rule %q: the file ships alerts only", g.Name, r.Record)
				continue
			}
			alerts = append(alerts, r.Alert)
			names, e, err := metricNames(r.Expr)
			if err != nil {
				t.Errorf("alert %s: %v", r.Alert, err)
				continue
			}
			if e.Type() != parser.ValueTypeVector {
				t.Errorf("alert %s: a %s, not an instant vector", r.Alert, e.Type())
			}
			if bad := unknownNames(names, known); len(bad) > 0 || len(names) == 0 {
				t.Errorf("alert %s: metrics %v, unknown %v", r.Alert, names, bad)
			}
			if r.Labels["severity"] != "warning" && r.Labels["severity"] != "critical" {
				t.Errorf("alert %s: severity %q, want warning or critical", r.Alert, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: no summary or description", r.Alert)
			}
		}
	}
	sort.Strings(alerts)
	want := []string{
		"OpenSearchRoutedDiscoveryForbidden", "OpenSearchRoutedNodeDead", "OpenSearchRoutedNodeDegraded",
		"OpenSearchRoutedRecordsFailing", "OpenSearchRoutedRecordsRetried", "OpenSearchRoutedUnroutedShareHigh",
	}
	if !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v", alerts, want)
	}
	rules, err := AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) != len(want) {
		t.Errorf("AlertRules read %d alerts, rulefmt %d", len(rules), len(want))
	}
}

// TestChecksCatchMistakes: the parse and name checks above reject what
// they are meant to, so that their passing means something.
func TestChecksCatchMistakes(t *testing.T) {
	known := exporterMetrics(t)
	for _, expr := range []string{
		`sum by (outcome) (rate(otelcol_opensearchrouted_documents[5m]`,    // unbalanced
		`histogram_quantile(0.99, sum by (le) otelcol_opensearchrouted_x)`, // no parentheses
		`rate(otelcol_opensearchrouted_node_state)`,                        // no range
	} {
		if _, _, err := metricNames(expr); err == nil {
			t.Errorf("parsed: %s", expr)
		}
	}
	for _, expr := range []string{
		`sum(rate(otelcol_opensearchrouted_documents_total[5m]))`,                 // the _total the collector does not add
		`rate(otelcol_opensearchrouted_bulk_request_duration_seconds_bucket[5m])`, // nor a unit suffix
		`otelcol_opensearchrouted_bulk_request_duration`,                          // a histogram's bare name
	} {
		names, _, err := metricNames(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if len(unknownNames(names, known)) == 0 {
			t.Errorf("not caught as unknown: %s", expr)
		}
	}
	if _, errs := rulefmt.Parse([]byte("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: sum(\n"), false, model.UTF8Validation, promqlParser, slog.New(slog.DiscardHandler)); len(errs) == 0 {
		t.Error("rulefmt accepted a broken expression")
	}
}

// TestScaleFor: the test's rules differ from the shipped ones in for: only.
func TestScaleFor(t *testing.T) {
	scaled, err := ScaleFor(forDivisor)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parseRules(scaled)
	if err != nil {
		t.Fatal(err)
	}
	shipped, err := AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			s := shipped[i]
			i++
			if r.Alert != s.Alert || strings.TrimSpace(r.Expr) != s.Expr {
				t.Errorf("rule %d changed: %s %q", i, r.Alert, r.Expr)
			}
			want := ""
			if s.For > 0 {
				want = fmt.Sprintf("%ds", int64(math.Ceil(s.For.Seconds()/forDivisor)))
			}
			if r.For != want {
				t.Errorf("alert %s: for %q in the test's rules, want %q (shipped %v)", s.Alert, r.For, want, s.For)
			}
		}
	}
	if i != len(shipped) {
		t.Errorf("the scaled file has %d rules, the shipped one %d", i, len(shipped))
	}
}

// TestDashboardShape: what Grafana needs to import the dashboard and show
// every panel: a uid and title, unique panel ids, panels inside the 24-column
// grid without overlapping, every panel and query on the dashboard's data
// source variable, and the variables the queries use defined.
func TestDashboardShape(t *testing.T) {
	var d struct {
		UID        string `json:"uid"`
		Title      string `json:"title"`
		Templating struct {
			List []struct {
				Name, Type string
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID         int    `json:"id"`
			Type       string `json:"type"`
			Title      string `json:"title"`
			Datasource *struct {
				Type string `json:"type"`
				UID  string `json:"uid"`
			} `json:"datasource"`
			GridPos struct{ H, W, X, Y int } `json:"gridPos"`
			Targets []struct {
				Datasource *struct {
					UID string `json:"uid"`
				} `json:"datasource"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(DashboardJSON, &d); err != nil {
		t.Fatal(err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q", d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" || vars["instance"] != "query" {
		t.Errorf("variables %v: want datasource (datasource) and instance (query)", vars)
	}
	ids := map[int]bool{}
	cells := map[[2]int]string{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the grid", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if o, ok := cells[[2]int{x, y}]; ok {
					t.Errorf("panels %q and %q overlap at %d,%d", o, p.Title, x, y)
				}
				cells[[2]int{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: data source %+v, want prometheus ${datasource}", p.Title, p.Datasource)
		}
		for i, tg := range p.Targets {
			if tg.Datasource == nil || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q query %d: data source %+v", p.Title, i, tg.Datasource)
			}
		}
	}
}
