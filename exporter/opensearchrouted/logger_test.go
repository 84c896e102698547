package opensearchrouted

import (
	"slices"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// injectingCore stands in for the collector's logger core, which adds the
// component's attributes (otelcol.signal among them) to every entry and can
// return a core without some of them.
type injectingCore struct {
	zapcore.Core
	attrs []string
}

func (c injectingCore) DropInjectedAttributes(drop ...string) zapcore.Core {
	kept := slices.DeleteFunc(slices.Clone(c.attrs), func(a string) bool { return slices.Contains(drop, a) })
	return injectingCore{Core: c.Core, attrs: kept}
}

func (c injectingCore) With(fs []zapcore.Field) zapcore.Core {
	return injectingCore{Core: c.Core.With(fs), attrs: c.attrs}
}

func (c injectingCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c injectingCore) Write(e zapcore.Entry, fs []zapcore.Field) error {
	for _, a := range c.attrs {
		fs = append(fs, zap.String(a, "injected"))
	}
	return c.Core.Write(e, fs)
}

// The shared router's logger names the component but not the signal of
// the exporter that happened to start it.
func TestRouterLoggerCarriesNoSignal(t *testing.T) {
	obs, logs := observer.New(zapcore.InfoLevel)
	l := zap.New(injectingCore{Core: obs, attrs: []string{"otelcol.component.id", "otelcol.signal"}})
	withoutSignal(l).Info("OpenSearch node marked dead")
	l.Info("exporter line")
	all := logs.All()
	if len(all) != 2 {
		t.Fatalf("%d entries", len(all))
	}
	if m := all[0].ContextMap(); m["otelcol.signal"] != nil || m["otelcol.component.id"] == nil {
		t.Errorf("router line: %v, want the component id and no signal", m)
	}
	if m := all[1].ContextMap(); m["otelcol.signal"] == nil {
		t.Errorf("exporter line lost its signal: %v", m)
	}
}
