//go:build race

package opensearchbackfill

// The race detector slows pdata and the emulator about tenfold: under it
// the round trip runs a fifth of issue 6's volume (the full volume runs
// without -race: go test -run RoundTrip ./receiver/opensearchbackfill/).
const roundTripScale = 5
