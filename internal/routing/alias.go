package routing

import (
	"context"
	"errors"
	"fmt"
)

// Write aliases (the classic rollover setup: logs-write → logs-000042). A
// target name that is neither an index nor a data stream is looked up as
// an alias at refresh; an alias with a write index is routed as that index,
// with the alias's index_routing as every document's routing value, as the
// server applies it. A write through the alias still names the alias (the
// server resolves it); a rollover shows in the items' _index and triggers a
// refresh as for data streams.

// pathCatAliases lists aliases by name; names that are no alias are simply
// absent from the answer.
const pathCatAliases = "/_cat/aliases/%s?format=json&h=alias,index,routing.index,is_write_index"

// catAlias is one row of _cat/aliases: every value a string, "-" for unset.
type catAlias struct {
	Alias        string `json:"alias"`
	Index        string `json:"index"`
	IndexRouting string `json:"routing.index"`
	IsWriteIndex string `json:"is_write_index"`
}

// aliasWrite is where writes through an alias go.
type aliasWrite struct {
	index   string // the write index
	routing string // index_routing ("" = none)
}

// aliasWrites resolves each alias of the rows to its write index: the index
// marked is_write_index, else the only index of an alias not marked false.
// An alias over several indices none of which is the write index takes no
// writes and is left out (its documents stay unrouted, as the server
// rejects them).
func aliasWrites(rows []catAlias) map[string]aliasWrite {
	type acc struct {
		n      int
		only   catAlias
		marked *catAlias
	}
	by := map[string]*acc{}
	for i := range rows {
		r := &rows[i]
		a := by[r.Alias]
		if a == nil {
			a = &acc{}
			by[r.Alias] = a
		}
		a.n++
		a.only = *r
		if r.IsWriteIndex == "true" {
			a.marked = r
		}
	}
	out := map[string]aliasWrite{}
	for name, a := range by {
		var r catAlias
		switch {
		case a.marked != nil:
			r = *a.marked
		case a.n == 1 && a.only.IsWriteIndex != "false":
			r = a.only
		default:
			continue
		}
		w := aliasWrite{index: r.Index}
		if r.IndexRouting != "-" {
			w.routing = r.IndexRouting
		}
		out[name] = w
	}
	return out
}

// AliasRouting returns the index_routing of the write alias name ("" when
// name is no alias the topology knows, or one without index_routing):
// every document written through it is placed by that value.
func (t *Topology) AliasRouting(name string) string {
	if t == nil {
		return ""
	}
	return t.targets[name].routing
}

// resolveAliases looks names up as aliases (in short batches). A refused
// call is warned about once and, like any other 4xx, leaves the names
// unresolved; a 5xx fails the refresh (the previous snapshot stays).
func (r *Router) resolveAliases(ctx context.Context, eps []string, names []string) (map[string]aliasWrite, error) {
	var rows []catAlias
	for _, b := range batches(names) {
		var part []catAlias
		if err := r.get(ctx, eps, "aliases", fmt.Sprintf(pathCatAliases, b), &part); err != nil {
			var he *HTTPError
			switch {
			case isForbidden(err):
				r.forbidden("aliases", err)
				return nil, nil
			case errors.As(err, &he) && he.Status/100 == 4:
				// A server without the call (a managed service): no aliases.
				return nil, nil
			}
			return nil, err
		}
		rows = append(rows, part...)
	}
	return aliasWrites(rows), nil
}
