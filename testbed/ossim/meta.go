package ossim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// decodeBody decodes a JSON request body (numbers as json.Number). An
// empty body gives an empty map.
func (q *request) decodeBody() (map[string]any, bool) {
	if len(bytes.TrimSpace(q.body)) == 0 {
		return map[string]any{}, true
	}
	var v map[string]any
	d := json.NewDecoder(bytes.NewReader(q.body))
	d.UseNumber()
	if err := d.Decode(&v); err != nil || v == nil {
		reason := "request body must be a JSON object"
		if err != nil {
			reason = "Failed to parse content to map: " + err.Error()
		}
		q.fail(400, "parse_exception", reason)
		return nil, false
	}
	return v, true
}

// flattenSettings turns {"settings":{"index":{"number_of_shards":3}}} (or
// "number_of_shards", or "index.number_of_shards") into
// {"index.number_of_shards":"3"}.
func flattenSettings(v any, prefix string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flattenSettings(val, key, out)
		}
	case nil:
		out[prefix] = ""
	case json.Number:
		out[prefix] = x.String()
	case string:
		out[prefix] = x
	case bool:
		out[prefix] = strconv.FormatBool(x)
	default:
		b, _ := json.Marshal(x)
		out[prefix] = string(b)
	}
	if prefix != "" && !strings.HasPrefix(prefix, "index.") {
		if val, ok := out[prefix]; ok {
			delete(out, prefix)
			out["index."+prefix] = val
		}
	}
}

func settingsOf(body map[string]any) map[string]string {
	out := map[string]string{}
	if s, ok := body["settings"]; ok {
		flattenSettings(s, "", out)
	}
	return out
}

func validIndexName(name string) *osErr {
	bad := func(why string) *osErr {
		return &osErr{status: 400, typ: "invalid_index_name_exception", reason: "Invalid index name [" + name + "], " + why, index: name}
	}
	switch {
	case name == "":
		return bad("must not be empty")
	case name == "." || name == "..":
		return bad("must not be '.' or '..'")
	case strings.ToLower(name) != name:
		return bad("must be lowercase")
	case strings.ContainsAny(name, `\/*?"<>| ,#:`):
		return bad(`must not contain the following characters [ , ", *, \, <, |, ,, >, /, ?]`)
	case strings.HasPrefix(name, "_") || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "+"):
		return bad("must not start with '_', '-', or '+'")
	case len(name) > 255:
		return bad("index name is too long")
	}
	return nil
}

func intSetting(s map[string]string, key string, def int) (int, *osErr) {
	v, ok := s[key]
	if !ok || v == "" {
		return def, nil
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		return 0, &osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("Failed to parse value [%s] for setting [%s]", v, key)}
	}
	return i, nil
}

// createIndexLocked creates an index. Must hold c.mu (write).
// writeIndexName is the concrete index a write to name lands in (the
// write index of a data stream), or name itself.
func (c *Cluster) writeIndexName(name string) string {
	if ds := c.dataStreams[name]; ds != nil && len(ds.indices) > 0 {
		return ds.indices[len(ds.indices)-1].name
	}
	return name
}

// routingRequiredIn reports "mappings":{"_routing":{"required":true}}.
func routingRequiredIn(body map[string]any) bool {
	m, _ := body["mappings"].(map[string]any)
	r, _ := m["_routing"].(map[string]any)
	req, _ := r["required"].(bool)
	return req
}

func (c *Cluster) createIndexLocked(name string, s map[string]string, ds string) (*indexMeta, *osErr) {
	if e := validIndexName(name); e != nil && !strings.HasPrefix(name, ".ds-") {
		return nil, e
	}
	if old := c.indices[name]; old != nil {
		return nil, &osErr{status: 400, typ: "resource_already_exists_exception", reason: "index [" + name + "/" + old.uuid + "] already exists", index: name, uuid: old.uuid}
	}
	if c.dataStreams[name] != nil {
		return nil, &osErr{status: 400, typ: "illegal_argument_exception", reason: "index [" + name + "] conflicts with data stream", index: name}
	}
	nShards, e := intSetting(s, "index.number_of_shards", c.opts.DefaultShards)
	if e != nil {
		return nil, e
	}
	if nShards < 1 || nShards > 1024 {
		return nil, &osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("Failed to parse value [%d] for setting [index.number_of_shards] must be >= 1", nShards)}
	}
	replicas, e := intSetting(s, "index.number_of_replicas", c.opts.DefaultReplicas)
	if e != nil {
		return nil, e
	}
	if replicas < 0 {
		return nil, &osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("Failed to parse value [%d] for setting [index.number_of_replicas] must be >= 0", replicas)}
	}
	r, e := intSetting(s, "index.number_of_routing_shards", 0)
	if e != nil {
		return nil, e
	}
	p, e := intSetting(s, "index.routing_partition_size", 1)
	if e != nil {
		return nil, e
	}
	if r != 0 && (r < nShards || r%nShards != 0) {
		return nil, &osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("the number of source shards [%d] must be a factor of [%d]", nShards, r)}
	}
	layout, err := routing.NewLayout(nShards, r, p)
	if err != nil {
		return nil, &osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("routing partition size [%d] should be a positive number less than the number of routing shards [%d]", p, layout.RoutingShards)}
	}
	_, explicitP := s["index.routing_partition_size"]
	im := &indexMeta{name: name, uuid: randomID(22), layout: layout, replicas: replicas, created: time.Now(),
		dataStream: ds, explicitP: explicitP, blocksWrite: s["index.blocks.write"] == "true",
		requireName: s["index.routing.allocation.require._name"], routingRequired: s["ossim.routing_required"] == "true"}
	if v, ok := s["index.routing.allocation.total_shards_per_node"]; ok {
		im.perNode, _ = strconv.Atoi(v)
	}
	for i := 0; i < nShards; i++ {
		im.shards = append(im.shards, &shardGroup{index: im, num: i, primaryTerm: 1})
	}
	im.mapping, e = newIndexMapping(nil, s, ds != "")
	if e != nil {
		return nil, e
	}
	im.mapping.v3 = c.v3()
	c.allocateNew(im)
	c.indices[name] = im
	return im, nil
}

// matchTemplate returns the highest-priority template matching name.
func (c *Cluster) matchTemplate(name string) *indexTemplate {
	var best *indexTemplate
	for _, t := range c.templates {
		for _, p := range t.patterns {
			if ok, _ := path.Match(p, name); ok {
				if best == nil || t.priority > best.priority || t.priority == best.priority && t.name < best.name {
					best = t
				}
				break
			}
		}
	}
	return best
}

// autoCreateLocked creates an index or a data stream on first write.
func (c *Cluster) autoCreateLocked(name string) (*indexMeta, *osErr) {
	if e := validIndexName(name); e != nil {
		return nil, e
	}
	t := c.matchTemplate(name)
	if t != nil && t.dataStream {
		ds, e := c.createDataStreamLocked(name, t)
		if e != nil {
			return nil, e
		}
		return ds.indices[0], nil
	}
	s := map[string]string{}
	if t != nil {
		for k, v := range t.settings {
			s[k] = v
		}
	}
	im, e := c.createIndexLocked(name, s, "")
	if e == nil && t != nil {
		e = c.setMappingLocked(im, s, t.mappings)
	}
	return im, e
}

func backingName(ds string, gen int) string {
	return fmt.Sprintf(".ds-%s-%06d", ds, gen)
}

func (c *Cluster) createDataStreamLocked(name string, t *indexTemplate) (*dataStream, *osErr) {
	if c.dataStreams[name] != nil {
		return nil, &osErr{status: 400, typ: "resource_already_exists_exception", reason: "data_stream [" + name + "] already exists"}
	}
	if c.indices[name] != nil {
		return nil, &osErr{status: 400, typ: "illegal_argument_exception", reason: "data_stream [" + name + "] conflicts with existing index"}
	}
	im, e := c.createIndexLocked(backingName(name, 1), t.settings, name)
	if e == nil {
		e = c.setMappingLocked(im, t.settings, t.mappings)
	}
	if e != nil {
		return nil, e
	}
	ds := &dataStream{name: name, template: t.name, indices: []*indexMeta{im}}
	c.dataStreams[name] = ds
	return ds, nil
}

func (q *request) handleCreateIndex(name string) {
	body, ok := q.decodeBody()
	if !ok {
		return
	}
	c := q.n.c
	c.mu.Lock()
	s := map[string]string{}
	var tmpl map[string]any
	if t := c.matchTemplate(name); t != nil && !t.dataStream {
		for k, v := range t.settings {
			s[k] = v
		}
		tmpl = t.mappings
	}
	for k, v := range settingsOf(body) {
		s[k] = v
	}
	if routingRequiredIn(body) {
		s["ossim.routing_required"] = "true"
	}
	im, e := c.createIndexLocked(name, s, "")
	if e == nil {
		given, _ := body["mappings"].(map[string]any)
		if e = c.setMappingLocked(im, s, tmpl, given); e != nil {
			c.deleteIndexLocked(im)
		}
	}
	if e == nil {
		as, _ := body["aliases"].(map[string]any)
		for alias, v := range as {
			m, _ := v.(map[string]any)
			if e = c.addAliasLocked(name, alias, aliasSpec(m)); e != nil {
				break
			}
		}
	}
	c.mu.Unlock()
	if e != nil {
		q.failE(e)
		return
	}
	q.reply(200, []byte(`{"acknowledged":true,"shards_acknowledged":true,"index":`+string(appendStr(nil, name))+`}`))
}

// failE replies with e. Errors about an index carry index and
// index_uuid, and index_not_found_exception also resource.type and
// resource.id, as OpenSearch 2.19 does.
func (q *request) failE(e *osErr) {
	if e.index == "" {
		q.fail(e.status, e.typ, e.reason)
		return
	}
	uuid := e.uuid
	if uuid == "" {
		uuid = "_na_"
	}
	extra := []string{"index", e.index, "index_uuid", uuid}
	if e.typ == "index_not_found_exception" {
		rt := e.resType
		if rt == "" {
			rt = "index_or_alias"
		}
		extra = append(extra, "resource.type", rt, "resource.id", e.index)
	}
	q.fail(e.status, e.typ, e.reason, extra...)
}

func notFound(name string) *osErr {
	return &osErr{status: 404, typ: "index_not_found_exception", reason: "no such index [" + name + "]", index: name}
}

// resolveIndicesLocked expands a comma-separated expression (names,
// wildcards, data streams, _all) to concrete indices, sorted by name.
func (c *Cluster) resolveIndicesLocked(expr string) ([]*indexMeta, *osErr) {
	seen := map[*indexMeta]bool{}
	var out []*indexMeta
	add := func(im *indexMeta) {
		if !seen[im] {
			seen[im] = true
			out = append(out, im)
		}
	}
	if expr == "" || expr == "_all" || expr == "*" {
		for _, im := range c.indices {
			if im.dataStream == "" || expr != "" {
				add(im)
			}
		}
		if expr == "" {
			for _, ds := range c.dataStreams {
				for _, im := range ds.indices {
					add(im)
				}
			}
		}
	} else {
		for _, part := range strings.Split(expr, ",") {
			if strings.Contains(part, "*") {
				for name, im := range c.indices {
					if ok, _ := path.Match(part, name); ok && !strings.HasPrefix(name, ".") {
						add(im)
					}
				}
				for name, ds := range c.dataStreams {
					if ok, _ := path.Match(part, name); ok {
						for _, im := range ds.indices {
							add(im)
						}
					}
				}
				continue
			}
			if ds := c.dataStreams[part]; ds != nil {
				for _, im := range ds.indices {
					add(im)
				}
				continue
			}
			if on := c.aliases[part]; len(on) > 0 { // an alias: all its indices
				for name := range on {
					if im := c.indices[name]; im != nil {
						add(im)
					}
				}
				continue
			}
			im := c.indices[part]
			if im == nil {
				return nil, notFound(part)
			}
			add(im)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

func (c *Cluster) indexShardByUUID(uuid, shard string) (*indexMeta, int, bool) {
	s, err := strconv.Atoi(shard)
	if err != nil {
		return nil, 0, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, im := range c.indices {
		if im.uuid == uuid && s >= 0 && s < len(im.shards) {
			return im, s, true
		}
	}
	return nil, 0, false
}

func (q *request) handleDeleteIndex(expr string) {
	c := q.n.c
	c.mu.Lock()
	ims, e := c.resolveIndicesLocked(expr)
	if e == nil {
		for _, im := range ims {
			if im.dataStream != "" && c.dataStreams[im.dataStream] != nil {
				ds := c.dataStreams[im.dataStream]
				if ds.indices[len(ds.indices)-1] == im {
					e = &osErr{status: 400, typ: "illegal_argument_exception", reason: "index [" + im.name + "] is the write index for data stream [" + ds.name + "] and cannot be deleted"}
					break
				}
			}
		}
	}
	if e == nil {
		for _, im := range ims {
			c.deleteIndexLocked(im)
		}
	}
	c.mu.Unlock()
	if e != nil {
		q.failE(e)
		return
	}
	q.reply(200, []byte(`{"acknowledged":true}`))
}

func (c *Cluster) deleteIndexLocked(im *indexMeta) {
	delete(c.indices, im.name)
	c.dropIndexAliasesLocked(im.name)
	if ds := c.dataStreams[im.dataStream]; ds != nil {
		for i, x := range ds.indices {
			if x == im {
				ds.indices = append(ds.indices[:i:i], ds.indices[i+1:]...)
				break
			}
		}
	}
	for _, n := range c.nodes {
		n.dropIndex(im.uuid)
	}
}

func (im *indexMeta) settingsJSON() map[string]any {
	idx := map[string]any{
		"number_of_shards":   strconv.Itoa(im.layout.Shards),
		"number_of_replicas": strconv.Itoa(im.replicas),
		"uuid":               im.uuid,
		"provided_name":      im.name,
		"creation_date":      strconv.FormatInt(im.created.UnixMilli(), 10),
		"version":            map[string]any{"created": "136408127"},
	}
	if im.explicitP {
		idx["routing_partition_size"] = strconv.Itoa(im.layout.PartitionSize)
	}
	if im.blocksWrite {
		idx["blocks"] = map[string]any{"write": "true"}
	}
	if im.dataStream != "" {
		idx["hidden"] = "true"
	}
	if im.requireName != "" {
		idx["routing"] = map[string]any{"allocation": map[string]any{"require": map[string]any{"_name": im.requireName}}}
	}
	return map[string]any{"index": idx}
}

func (q *request) handleGetIndex(expr string) {
	q.replyPerIndex(expr, func(im *indexMeta) any {
		return map[string]any{"aliases": map[string]any{}, "mappings": im.mapping.mappingJSON(), "settings": im.settingsJSON()}
	})
}

// replyPerIndex answers {"<index>": body(index)} for the indices of expr.
func (q *request) replyPerIndex(expr string, body func(*indexMeta) any) {
	c := q.n.c
	c.mu.RLock()
	ims, e := c.resolveIndicesLocked(expr)
	out := map[string]any{}
	for _, im := range ims {
		out[im.name] = body(im)
	}
	c.mu.RUnlock()
	if e != nil {
		q.failE(e)
		return
	}
	q.replyJSON(200, out)
}

func (q *request) handlePutSettings(expr string) {
	body, ok := q.decodeBody()
	if !ok {
		return
	}
	s := map[string]string{}
	if _, has := body["settings"]; has {
		s = settingsOf(body)
	} else {
		flattenSettings(body, "", s)
	}
	c := q.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	ims, e := c.resolveIndicesLocked(expr)
	if e != nil {
		q.failE(e)
		return
	}
	for k, v := range s {
		switch k {
		case "index.blocks.write":
			for _, im := range ims {
				im.blocksWrite = v == "true"
			}
		case "index.number_of_replicas":
			r, err := strconv.Atoi(v)
			if err != nil || r < 0 {
				q.fail(400, "illegal_argument_exception", "Failed to parse value ["+v+"] for setting [index.number_of_replicas]")
				return
			}
			for _, im := range ims {
				c.setReplicasLocked(im, r)
			}
		default:
			q.fail(400, "illegal_argument_exception", "ossim: updating setting ["+k+"] is not supported")
			return
		}
	}
	q.reply(200, []byte(`{"acknowledged":true}`))
}

func (c *Cluster) setReplicasLocked(im *indexMeta, r int) {
	im.replicas = r
	for _, g := range im.shards {
		var keep []*shardCopy
		replicas := 0
		for _, sc := range g.copies {
			if sc.primary {
				keep = append(keep, sc)
				continue
			}
			if replicas < r {
				keep = append(keep, sc)
				replicas++
			} else if sc.node != nil {
				sc.node.dropStore(im.uuid, g.num)
				sc.gen++
			}
		}
		for ; replicas < r; replicas++ {
			keep = append(keep, &shardCopy{state: StateUnassigned, allocID: randomID(22)})
		}
		g.copies = keep
	}
	c.reallocate()
}

// ---- templates and data streams ----

func (q *request) handlePutTemplate(name string) {
	body, ok := q.decodeBody()
	if !ok {
		return
	}
	t := &indexTemplate{name: name, settings: map[string]string{}}
	switch p := body["index_patterns"].(type) {
	case string:
		t.patterns = []string{p}
	case []any:
		for _, x := range p {
			if s, ok := x.(string); ok {
				t.patterns = append(t.patterns, s)
			}
		}
	}
	if len(t.patterns) == 0 {
		q.fail(400, "action_request_validation_exception", "Validation Failed: 1: index patterns are missing;")
		return
	}
	_, t.dataStream = body["data_stream"].(map[string]any)
	if pr, ok := body["priority"].(json.Number); ok {
		t.priority, _ = pr.Int64()
	}
	if tm, ok := body["template"].(map[string]any); ok {
		t.settings = settingsOf(tm)
		t.mappings, _ = tm["mappings"].(map[string]any)
		if _, e := newIndexMapping(t.mappings, t.settings, false); e != nil {
			q.failE(e)
			return
		}
	}
	c := q.n.c
	c.mu.Lock()
	for _, o := range c.templates {
		if o.name != name && o.priority == t.priority && overlaps(o.patterns, t.patterns) {
			c.mu.Unlock()
			q.fail(400, "illegal_argument_exception", fmt.Sprintf("index template [%s] has index patterns %v matching patterns from existing templates [%s] with patterns (%s => %v) that have the same priority [%d], multiple index templates may not match during index creation, please use a different priority", name, t.patterns, o.name, o.name, o.patterns, t.priority))
			return
		}
	}
	c.templates[name] = t
	c.mu.Unlock()
	q.reply(200, []byte(`{"acknowledged":true}`))
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
			if ok, _ := path.Match(x, strings.ReplaceAll(y, "*", "x")); ok {
				return true
			}
			if ok, _ := path.Match(y, strings.ReplaceAll(x, "*", "x")); ok {
				return true
			}
		}
	}
	return false
}

func (q *request) handleGetTemplate(name string) {
	c := q.n.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	var list []any
	for _, t := range c.templates {
		if ok, _ := path.Match(name, t.name); !ok {
			continue
		}
		it := map[string]any{"index_patterns": t.patterns, "priority": t.priority, "template": map[string]any{"settings": nestSettings(t.settings)}}
		if t.dataStream {
			it["data_stream"] = map[string]any{"timestamp_field": map[string]any{"name": "@timestamp"}}
		}
		list = append(list, map[string]any{"name": t.name, "index_template": it})
	}
	if len(list) == 0 {
		q.fail(404, "resource_not_found_exception", "index template matching ["+name+"] not found")
		return
	}
	q.replyJSON(200, map[string]any{"index_templates": list})
}

func nestSettings(s map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range s {
		cur := out
		parts := strings.Split(k, ".")
		for _, p := range parts[:len(parts)-1] {
			next, ok := cur[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[p] = next
			}
			cur = next
		}
		cur[parts[len(parts)-1]] = v
	}
	return out
}

func (q *request) handleDeleteTemplate(name string) {
	c := q.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.templates[name] == nil {
		q.fail(404, "index_template_missing_exception", "index_template ["+name+"] missing")
		return
	}
	delete(c.templates, name)
	q.reply(200, []byte(`{"acknowledged":true}`))
}

func (q *request) handleCreateDataStream(name string) {
	c := q.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.matchTemplate(name)
	if t == nil || !t.dataStream {
		q.fail(400, "illegal_argument_exception", "no matching index template found for data stream ["+name+"]")
		return
	}
	if _, e := c.createDataStreamLocked(name, t); e != nil {
		q.failE(e)
		return
	}
	q.reply(200, []byte(`{"acknowledged":true}`))
}

func (q *request) handleDeleteDataStream(name string) {
	c := q.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	var hit []*dataStream
	for n, ds := range c.dataStreams {
		if ok, _ := path.Match(name, n); ok {
			hit = append(hit, ds)
		}
	}
	if len(hit) == 0 {
		q.fail(404, "resource_not_found_exception", "data_stream matching ["+name+"] not found")
		return
	}
	for _, ds := range hit {
		for _, im := range append([]*indexMeta(nil), ds.indices...) {
			c.deleteIndexLocked(im)
		}
		delete(c.dataStreams, ds.name)
	}
	q.reply(200, []byte(`{"acknowledged":true}`))
}

func (q *request) handleGetDataStream(name string) {
	c := q.n.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	var names []string
	for n := range c.dataStreams {
		for _, pat := range strings.Split(name, ",") {
			if ok, _ := path.Match(pat, n); ok {
				names = append(names, n)
				break
			}
		}
	}
	sort.Strings(names)
	if len(names) == 0 && !strings.Contains(name, "*") {
		q.failE(notFound(name))
		return
	}
	list := []any{}
	for _, n := range names {
		ds := c.dataStreams[n]
		var idx []any
		status := "GREEN"
		for _, im := range ds.indices {
			idx = append(idx, map[string]any{"index_name": im.name, "index_uuid": im.uuid})
			switch c.indexHealthLocked(im) {
			case "red":
				status = "RED"
			case "yellow":
				if status == "GREEN" {
					status = "YELLOW"
				}
			}
		}
		list = append(list, map[string]any{
			"name": ds.name, "timestamp_field": map[string]any{"name": "@timestamp"},
			"indices": idx, "generation": ds.generation(), "status": status, "template": ds.template,
		})
	}
	q.replyJSON(200, map[string]any{"data_streams": list})
}

func (ds *dataStream) generation() int {
	if len(ds.indices) == 0 {
		return 0
	}
	last := ds.indices[len(ds.indices)-1].name
	g, _ := strconv.Atoi(last[strings.LastIndexByte(last, '-')+1:])
	return g
}

func (q *request) handleRollover(name string) {
	c := q.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	ds := c.dataStreams[name]
	if ds == nil && c.aliases[name] != nil {
		q.rolloverAliasLocked(name)
		return
	}
	if ds == nil {
		q.fail(400, "illegal_argument_exception", "rollover target ["+name+"] does not exist")
		return
	}
	old := ds.indices[len(ds.indices)-1]
	t := c.templates[ds.template]
	s := map[string]string{}
	if t != nil {
		s = t.settings
	}
	im, e := c.createIndexLocked(backingName(name, ds.generation()+1), s, name)
	if e == nil && t != nil {
		e = c.setMappingLocked(im, s, t.mappings)
	}
	if e != nil {
		q.failE(e)
		return
	}
	ds.indices = append(ds.indices, im)
	q.replyJSON(200, map[string]any{"acknowledged": true, "shards_acknowledged": true, "old_index": old.name,
		"new_index": im.name, "rolled_over": true, "dry_run": false, "conditions": map[string]any{}})
}

// ---- split / shrink ----

func (q *request) handleResize(src, target string, split bool) {
	body, ok := q.decodeBody()
	if !ok {
		return
	}
	s := settingsOf(body)
	c := q.n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	im := c.indices[src]
	if im == nil {
		q.failE(notFound(src))
		return
	}
	if !im.blocksWrite {
		q.fail(500, "illegal_state_exception", "index "+src+" must be read-only to resize index. use \"index.blocks.write=true\"")
		return
	}
	srcN := im.layout.Shards
	def := 1
	if split {
		def = srcN
	}
	tN, e := intSetting(s, "index.number_of_shards", def)
	if e != nil {
		q.failE(e)
		return
	}
	if _, has := s["index.number_of_routing_shards"]; has && srcN > 1 {
		q.fail(400, "illegal_argument_exception", "cannot provide index.number_of_routing_shards on resize")
		return
	}
	if split {
		if tN <= srcN {
			q.fail(400, "illegal_argument_exception", fmt.Sprintf("the number of source shards [%d] must be less that the number of target shards [%d]", srcN, tN))
			return
		}
		if tN%srcN != 0 {
			q.fail(400, "illegal_argument_exception", fmt.Sprintf("the number of source shards [%d] must be a must be a factor of [%d]", srcN, tN))
			return
		}
		rn := im.layout.RoutingShards
		if srcN == 1 {
			rn = tN
		}
		if rn%tN != 0 {
			q.fail(500, "illegal_state_exception", fmt.Sprintf("the number of routing shards [%d] must be a multiple of the target shards [%d]", rn, tN))
			return
		}
	} else if tN < 1 || srcN%tN != 0 {
		q.fail(400, "illegal_argument_exception", fmt.Sprintf("the number of source shards [%d] must be a multiple of [%d]", srcN, tN))
		return
	}
	ts := map[string]string{}
	if im.explicitP {
		ts["index.routing_partition_size"] = strconv.Itoa(im.layout.PartitionSize)
	}
	ts["index.blocks.write"] = "true"
	if im.routingRequired {
		ts["ossim.routing_required"] = "true"
	}
	for k, v := range s {
		ts[k] = v
	}
	ts["index.number_of_shards"] = strconv.Itoa(tN)
	if srcN > 1 {
		ts["index.number_of_routing_shards"] = strconv.Itoa(im.layout.RoutingShards)
	}
	tim, e := c.createIndexLocked(target, ts, "")
	if e != nil {
		q.failE(e)
		return
	}
	tim.explicitP = im.explicitP
	tim.mapping = im.mapping.clone()
	// Copy every document into the copies of its new shard, checking that
	// the target shard derives from the source shard as OpenSearch's
	// resize does (split: t / factor == s; shrink: s / factor == t).
	for _, g := range im.shards {
		prim := g.primaryCopy()
		if prim == nil || prim.node == nil {
			continue
		}
		st := prim.node.store(im.uuid, g.num)
		if st == nil {
			continue
		}
		for _, d := range st.snapshot() {
			ts, err := tim.layout.Shard(d.id, d.routing)
			if err != nil {
				ts = -1
			}
			okShard := false
			if split {
				okShard = ts >= 0 && ts/(tN/srcN) == g.num
			} else {
				okShard = ts >= 0 && g.num/(srcN/tN) == ts
			}
			if !okShard {
				c.deleteIndexLocked(tim)
				q.fail(500, "illegal_state_exception", fmt.Sprintf("ossim: document [%s] of [%s][%d] routes to [%s][%d], which does not derive from it", d.id, src, g.num, target, ts))
				return
			}
			for _, sc := range tim.shards[ts].copies {
				if sc.node != nil {
					dst := sc.node.ensureStore(tim, ts)
					dst.mu.Lock()
					dst.applyReplicaLocked(d, false)
					dst.mu.Unlock()
				}
			}
		}
	}
	q.reply(200, []byte(`{"acknowledged":true,"shards_acknowledged":true,"index":`+string(appendStr(nil, target))+`}`))
}

// StoredShardOf reports, for every document of index, the shard whose
// primary holds it, keyed by id. For tests of split and shrink.
func (c *Cluster) StoredShardOf(index string) (map[string]int, map[string]string, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	im := c.indices[index]
	if im == nil {
		return nil, nil, fmt.Errorf("ossim: no such index [%s]", index)
	}
	shards, routings := map[string]int{}, map[string]string{}
	for _, g := range im.shards {
		prim := g.primaryCopy()
		if prim == nil || prim.node == nil {
			continue
		}
		if st := prim.node.store(im.uuid, g.num); st != nil {
			for _, d := range st.snapshot() {
				shards[d.id] = g.num
				routings[d.id] = d.routing
			}
		}
	}
	return shards, routings, nil
}
