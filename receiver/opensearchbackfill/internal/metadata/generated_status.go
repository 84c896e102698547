// Package metadata holds the receiver's component metadata and telemetry,
// in the shape mdatagen generates from ../../metadata.yaml (written by hand:
// mdatagen is not available to this project). metadata_test.go keeps it
// consistent with the YAML.
package metadata

import (
	"go.opentelemetry.io/collector/component"
)

var (
	Type      = component.MustNewType("opensearchbackfill")
	ScopeName = "github.com/opensearchrouted/opensearchrouted/receiver/opensearchbackfill"
)

const (
	LogsStability   = component.StabilityLevelAlpha
	TracesStability = component.StabilityLevelAlpha
)
