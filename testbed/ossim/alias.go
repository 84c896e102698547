package ossim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Aliases: created with an index ("aliases" in the create body) or by
// POST /_aliases; a write through an alias goes to its write index (the one
// marked is_write_index, else its only index unless marked false), with
// the alias's index_routing as the document's routing; POST
// /<alias>/_rollover creates the next index (settings from templates, as
// the server does) and moves the write index to it. _cat/aliases lists
// them. Guarded by Cluster.mu.

// aliasOn is one alias on one index.
type aliasOn struct {
	isWrite      *bool
	indexRouting string
	filter       bool
}

// aliasesLocked returns the alias table, creating it.
func (c *Cluster) aliasesLocked() map[string]map[string]*aliasOn {
	if c.aliases == nil {
		c.aliases = map[string]map[string]*aliasOn{}
	}
	return c.aliases
}

// aliasSpec reads one alias's properties from a create body or an add
// action.
func aliasSpec(m map[string]any) *aliasOn {
	a := &aliasOn{}
	if b, ok := m["is_write_index"].(bool); ok {
		a.isWrite = &b
	}
	if r, ok := m["index_routing"].(string); ok {
		a.indexRouting = r
	} else if r, ok := m["routing"].(string); ok {
		a.indexRouting = r
	}
	_, a.filter = m["filter"]
	return a
}

// addAliasLocked puts alias on index, as the server checks it.
func (c *Cluster) addAliasLocked(index, alias string, a *aliasOn) *osErr {
	if c.indices[index] == nil {
		return notFound(index)
	}
	if c.indices[alias] != nil || c.dataStreams[alias] != nil {
		return &osErr{status: 400, typ: "invalid_alias_name_exception", reason: "Invalid alias name [" + alias + "]: an index or data stream exists with the same name as the alias", index: alias}
	}
	tab := c.aliasesLocked()
	on := tab[alias]
	if on == nil {
		on = map[string]*aliasOn{}
		tab[alias] = on
	}
	if a.isWrite != nil && *a.isWrite {
		for idx, o := range on {
			if idx != index && o.isWrite != nil && *o.isWrite {
				return &osErr{status: 400, typ: "illegal_state_exception", reason: "alias [" + alias + "] has more than one write index [" + idx + "," + index + "]"}
			}
		}
	}
	on[index] = a
	return nil
}

// aliasWriteLocked returns the write index of alias and the routing of
// writes through it, or an error if it has none; ok is false when alias
// is no alias.
func (c *Cluster) aliasWriteLocked(alias string) (idx *indexMeta, routing string, e *osErr, ok bool) {
	on := c.aliases[alias]
	if len(on) == 0 {
		return nil, "", nil, false
	}
	var name string
	for n, a := range on {
		if a.isWrite != nil && *a.isWrite {
			name = n
		}
	}
	if name == "" && len(on) == 1 {
		for n, a := range on {
			if a.isWrite == nil || *a.isWrite {
				name = n
			}
		}
	}
	if name == "" {
		return nil, "", &osErr{status: 400, typ: "illegal_argument_exception", reason: "no write index is defined for alias [" + alias + "]." +
			" The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index"}, true
	}
	return c.indices[name], on[name].indexRouting, nil, true
}

// dropIndexAliasesLocked removes index from every alias (index deleted).
func (c *Cluster) dropIndexAliasesLocked(index string) {
	for alias, on := range c.aliases {
		delete(on, index)
		if len(on) == 0 {
			delete(c.aliases, alias)
		}
	}
}

// handleAliases is POST /_aliases with add and remove actions.
func (q *request) handleAliases() {
	body, ok := q.decodeBody()
	if !ok {
		return
	}
	acts, _ := body["actions"].([]any)
	c := q.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, raw := range acts {
		act, _ := raw.(map[string]any)
		for kind, v := range act {
			m, _ := v.(map[string]any)
			index, _ := m["index"].(string)
			alias, _ := m["alias"].(string)
			switch kind {
			case "add":
				if e := c.addAliasLocked(index, alias, aliasSpec(m)); e != nil {
					q.failE(e)
					return
				}
			case "remove":
				if on := c.aliases[alias]; on[index] != nil {
					delete(on, index)
					if len(on) == 0 {
						delete(c.aliases, alias)
					}
				} else {
					q.fail(404, "aliases_not_found_exception", "aliases ["+alias+"] missing")
					return
				}
			default:
				q.fail(400, "illegal_argument_exception", "ossim: alias action ["+kind+"] is not supported")
				return
			}
		}
	}
	q.reply(200, []byte(`{"acknowledged":true}`))
}

// handleCatAliases is _cat/aliases[/names], rows sorted by alias and index.
func (q *request) handleCatAliases(expr string) {
	c := q.n.c
	c.mu.RLock()
	want := map[string]bool{}
	for _, n := range strings.Split(expr, ",") {
		if n != "" {
			want[n] = true
		}
	}
	var rows []map[string]any
	for alias, on := range c.aliases {
		if len(want) > 0 && !want[alias] {
			continue
		}
		for idx, a := range on {
			w := "-"
			if a.isWrite != nil {
				w = strconv.FormatBool(*a.isWrite)
			}
			r, f := "-", "-"
			if a.indexRouting != "" {
				r = a.indexRouting
			}
			if a.filter {
				f = "*"
			}
			rows = append(rows, map[string]any{"alias": alias, "index": idx, "filter": f, "routing.index": r, "routing.search": r, "is_write_index": w})
		}
	}
	c.mu.RUnlock()
	sort.Slice(rows, func(i, j int) bool {
		if rows[i]["alias"] != rows[j]["alias"] {
			return rows[i]["alias"].(string) < rows[j]["alias"].(string)
		}
		return rows[i]["index"].(string) < rows[j]["index"].(string)
	})
	if h := q.q.Get("h"); h != "" {
		cols := strings.Split(h, ",")
		for i, r := range rows {
			o := map[string]any{}
			for _, col := range cols {
				o[col] = r[col]
			}
			rows[i] = o
		}
	}
	if rows == nil {
		rows = []map[string]any{}
	}
	q.replyJSON(200, rows)
}

// rolloverAliasLocked rolls alias over to the next index: the write
// index's name with its trailing number incremented (6 digits), settings
// from the templates that match it.
func (q *request) rolloverAliasLocked(alias string) {
	c := q.n.c
	old, _, e, _ := c.aliasWriteLocked(alias)
	if e != nil {
		q.failE(e)
		return
	}
	i := strings.LastIndexByte(old.name, '-')
	num, err := strconv.Atoi(old.name[i+1:])
	if i < 0 || err != nil {
		q.fail(400, "illegal_argument_exception", "index name ["+old.name+"] does not match pattern '^.*-\\d+$'")
		return
	}
	next := fmt.Sprintf("%s-%06d", old.name[:i], num+1)
	s := map[string]string{}
	if t := c.matchTemplate(next); t != nil && !t.dataStream {
		for k, v := range t.settings {
			s[k] = v
		}
	}
	im, e := c.createIndexLocked(next, s, "")
	if e != nil {
		q.failE(e)
		return
	}
	on := c.aliases[alias]
	prev := on[old.name]
	if prev.isWrite != nil && *prev.isWrite {
		f, t := false, true
		prev.isWrite = &f
		on[next] = &aliasOn{isWrite: &t, indexRouting: prev.indexRouting}
	} else {
		delete(on, old.name)
		on[next] = &aliasOn{indexRouting: prev.indexRouting}
	}
	q.replyJSON(200, map[string]any{"acknowledged": true, "shards_acknowledged": true, "old_index": old.name,
		"new_index": im.name, "rolled_over": true, "dry_run": false, "conditions": map[string]any{}})
}
