package opensearchrouted

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// TestTargetPrecedence: record attributes override the resource's, which
// override the configuration; invalid or non-string values are ignored;
// a fixed index wins over everything.
func TestTargetPrecedence(t *testing.T) {
	attrs := func(kv ...any) pcommon.Map {
		m := pcommon.NewMap()
		for i := 0; i < len(kv); i += 2 {
			switch v := kv[i+1].(type) {
			case string:
				m.PutStr(kv[i].(string), v)
			case int:
				m.PutInt(kv[i].(string), int64(v))
			}
		}
		return m
	}
	cfg := createDefaultConfig()
	var tc targetCache
	tc.init(cfg, signalLogs)
	for _, c := range []struct {
		name     string
		res, rec pcommon.Map
		want     string
	}{
		{"defaults", attrs(), attrs(), "ss4o_logs-default-namespace"},
		{"resource dataset", attrs(attrDataset, "nginx"), attrs(), "ss4o_logs-nginx-namespace"},
		{"record over resource", attrs(attrDataset, "nginx", attrNamespace, "prod"), attrs(attrDataset, "app"), "ss4o_logs-app-prod"},
		{"record namespace only", attrs(), attrs(attrNamespace, "dev"), "ss4o_logs-default-dev"},
		{"invalid record value keeps the resource's", attrs(attrDataset, "nginx"), attrs(attrDataset, "Bad-Name*"), "ss4o_logs-nginx-namespace"},
		{"non-string ignored", attrs(attrNamespace, 7), attrs(), "ss4o_logs-default-namespace"},
		{"back to defaults by value", attrs(attrDataset, "default"), attrs(), "ss4o_logs-default-namespace"},
	} {
		o := tc.resource(c.res)
		if got := tc.record(o, c.rec); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	// The origin is found once per resource: a record's override does not
	// stick to the next record of the same resource.
	o := tc.resource(attrs(attrDataset, "nginx"))
	if got := tc.record(o, attrs(attrDataset, "app")); got != "ss4o_logs-app-namespace" {
		t.Errorf("overriding record: %q", got)
	}
	if got := tc.record(o, attrs()); got != "ss4o_logs-nginx-namespace" {
		t.Errorf("next record of the resource: %q", got)
	}

	cfg.LogsIndex = "fixed-logs"
	var fixed targetCache
	fixed.init(cfg, signalLogs)
	if got := fixed.record(fixed.resource(attrs(attrDataset, "nginx")), attrs(attrNamespace, "prod")); got != "fixed-logs" {
		t.Errorf("fixed index: %q", got)
	}
}
