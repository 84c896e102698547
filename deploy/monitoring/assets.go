// Package monitoring holds the Grafana dashboard and the Prometheus alert
// rules shipped for the opensearchrouted exporter's own telemetry, and reads
// them for the tests that check them: every query parsed by Prometheus' own
// PromQL parser, and run against a real Prometheus scraping a real
// collector.
//
// It is a module of its own so that Prometheus' packages, which only these
// tests need, never enter the graph of a collector built with the exporter.
package monitoring

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// DashboardJSON is grafana/opensearchrouted-dashboard.json.
//
//go:embed grafana/opensearchrouted-dashboard.json
var DashboardJSON []byte

// AlertRulesYAML is prometheus/opensearchrouted-alerts.yaml.
//
//go:embed prometheus/opensearchrouted-alerts.yaml
var AlertRulesYAML []byte

// PanelQuery is one query of one dashboard panel, as written in the
// dashboard (with Grafana's variables).
type PanelQuery struct {
	Panel string // the panel's title
	RefID string // the query's refId within the panel
	Expr  string
}

// PanelQueries returns every query of every panel of the dashboard, in
// panel order; an error names a panel without queries or a query without
// an expression.
func PanelQueries() ([]PanelQuery, error) {
	var d struct {
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(DashboardJSON, &d); err != nil {
		return nil, fmt.Errorf("monitoring: dashboard JSON: %w", err)
	}
	var out []PanelQuery
	var walk func([]dashboardPanel) error
	walk = func(ps []dashboardPanel) error {
		for _, p := range ps {
			if p.Type == "row" {
				if err := walk(p.Panels); err != nil {
					return err
				}
				continue
			}
			if len(p.Targets) == 0 {
				return fmt.Errorf("monitoring: dashboard panel %q has no query", p.Title)
			}
			for _, t := range p.Targets {
				if strings.TrimSpace(t.Expr) == "" {
					return fmt.Errorf("monitoring: dashboard panel %q query %s has no expression", p.Title, t.RefID)
				}
				out = append(out, PanelQuery{Panel: p.Title, RefID: t.RefID, Expr: t.Expr})
			}
		}
		return nil
	}
	if err := walk(d.Panels); err != nil {
		return nil, err
	}
	return out, nil
}

type dashboardPanel struct {
	Type    string           `json:"type"`
	Title   string           `json:"title"`
	Panels  []dashboardPanel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// AlertRule is one alerting rule of the rules file.
type AlertRule struct {
	Group  string
	Alert  string
	Expr   string
	For    time.Duration // 0 when the rule has no for:
	Labels map[string]string
}

// AlertRules returns every alerting rule of the rules file, in file order.
func AlertRules() ([]AlertRule, error) {
	f, err := parseRules(AlertRulesYAML)
	if err != nil {
		return nil, err
	}
	var out []AlertRule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			ar := AlertRule{Group: g.Name, Alert: r.Alert, Expr: strings.TrimSpace(r.Expr), Labels: r.Labels}
			if r.For != "" {
				if ar.For, err = parseDuration(r.For); err != nil {
					return nil, fmt.Errorf("monitoring: alert %s: for: %w", r.Alert, err)
				}
			}
			out = append(out, ar)
		}
	}
	return out, nil
}

type rulesFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert  string            `yaml:"alert"`
			Record string            `yaml:"record"`
			Expr   string            `yaml:"expr"`
			For    string            `yaml:"for"`
			Labels map[string]string `yaml:"labels"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func parseRules(b []byte) (*rulesFile, error) {
	var f rulesFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("monitoring: alert rules YAML: %w", err)
	}
	return &f, nil
}

// parseDuration reads a Prometheus duration of whole units (1h, 10m,
// 30s, 1m30s).
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("not a duration: %q", s)
	}
	return d, nil
}

// ScaleFor returns the rules file with every alerting rule's for: divided
// by div (rounded up to whole seconds, at least 1s where the rule had
// one), everything else as it is: thresholds, ranges and expressions stay
// the shipped ones. The real-Prometheus test loads this, so that a
// condition that must hold for 10m in production holds for 10s there.
func ScaleFor(div int) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(AlertRulesYAML, &doc); err != nil {
		return nil, fmt.Errorf("monitoring: alert rules YAML: %w", err)
	}
	var scaleErr error
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Value == "for" && v.Kind == yaml.ScalarNode {
					d, err := parseDuration(v.Value)
					if err != nil {
						scaleErr = err
						return
					}
					s := (d + time.Duration(div)*time.Second - 1) / (time.Duration(div) * time.Second)
					v.Value = fmt.Sprintf("%ds", max(int64(s), 1))
					continue
				}
				walk(v)
			}
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(&doc)
	if scaleErr != nil {
		return nil, scaleErr
	}
	return yaml.Marshal(&doc)
}

// Expand replaces the dashboard's Grafana variables in a panel query with
// what Grafana would send to Prometheus: $__rate_interval with rateInterval
// (a PromQL duration such as "1m"), $instance (all collectors) with ".*".
func Expand(expr, rateInterval string) string {
	return strings.NewReplacer("$__rate_interval", rateInterval, "${__rate_interval}", rateInterval,
		"$instance", ".*", "${instance}", ".*").Replace(expr)
}
