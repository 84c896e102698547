package opensearchbackfill

import (
	"context"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension"
)

// Issue 6 proof 3 with the real file storage extension (contrib
// filestorage v0.165.1): each run gets a new extension instance on the same
// directory, as a restarted collector would.
func TestCheckpointResumeFileStorage(t *testing.T) {
	id, exts := fileStorageOnDir(t.TempDir())
	checkpointScenario(t, id, exts)
}

// fileStorageOnDir returns the id of a file_storage extension on dir and a
// function that creates and starts a new instance of it for each run (shut
// down when the test ends), as the extensions of a restarted collector.
func fileStorageOnDir(dir string) (component.ID, func(t *testing.T) map[component.ID]component.Component) {
	f := filestorage.NewFactory()
	id := component.NewID(f.Type())
	return id, func(t *testing.T) map[component.ID]component.Component {
		cfg := f.CreateDefaultConfig().(*filestorage.Config)
		cfg.Directory = dir
		set := extension.Settings{
			ID:                id,
			TelemetrySettings: componenttest.NewNopTelemetrySettings(),
			BuildInfo:         component.NewDefaultBuildInfo(),
		}
		ext, err := f.Create(context.Background(), set, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := ext.Start(context.Background(), componenttest.NewNopHost()); err != nil {
			t.Fatal(err)
		}
		// Registered before the receiver's cleanup, so it runs after it
		// (last in, first out): the receiver closes its client first.
		t.Cleanup(func() {
			if err := ext.Shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		})
		return map[component.ID]component.Component{id: ext}
	}
}
