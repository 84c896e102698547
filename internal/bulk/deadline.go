package bulk

import (
	"net/url"
	"strconv"
	"time"
)

// withServerTimeout returns u with the bulk API's timeout parameter set to
// left, the time the request has before the client gives up on it
// (rounded down to whole milliseconds, at least 1ms): the server stops
// waiting for active shards, a dynamic mapping update or the creation of
// an index once the client no longer waits for its answer, and answers the
// items it could not start with an error instead of writing them later.
// A shard write already running is not interrupted.
func withServerTimeout(u *url.URL, left time.Duration) *url.URL {
	ms := max(left.Milliseconds(), 1)
	c := *u
	q := "timeout=" + strconv.FormatInt(ms, 10) + "ms"
	if c.RawQuery != "" {
		q = c.RawQuery + "&" + q
	}
	c.RawQuery = q
	return &c
}
