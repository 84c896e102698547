package ossim

import (
	"net/http"
	"strings"
)

// route dispatches a request by method and path.
func (n *Node) route(q *request) {
	p := strings.Trim(q.r.URL.Path, "/")
	var segs []string
	if p != "" {
		segs = strings.Split(p, "/")
	}
	m := q.r.Method
	get := m == http.MethodGet || m == http.MethodHead
	post := m == http.MethodPost || m == http.MethodPut
	if len(segs) == 0 {
		if get {
			q.handleRoot()
			return
		}
		q.noHandler()
		return
	}
	switch segs[0] {
	case "_ossim":
		q.handleAdmin(segs[1:])
		return
	case "_bulk":
		if post && len(segs) == 1 {
			q.handleBulk("")
			return
		}
	case "_aliases":
		if m == http.MethodPost && len(segs) == 1 {
			q.handleAliases()
			return
		}
	case "_nodes":
		if get {
			q.handleNodes(segs[1:])
			return
		}
	case "_cat":
		if get && len(segs) >= 2 {
			q.handleCat(segs[1], segs[2:])
			return
		}
	case "_cluster":
		if get && len(segs) >= 2 && segs[1] == "health" {
			q.handleHealth(segs[2:])
			return
		}
		if get && len(segs) >= 2 && segs[1] == "state" {
			q.handleClusterState(segs[2:])
			return
		}
		if m == http.MethodPost && len(segs) == 2 && segs[1] == "reroute" {
			q.handleReroute()
			return
		}
		if m == http.MethodPut && len(segs) == 2 && segs[1] == "settings" {
			q.handleClusterSettings()
			return
		}
	case "_index_template":
		if len(segs) == 2 {
			switch {
			case post:
				q.handlePutTemplate(segs[1])
				return
			case get:
				q.handleGetTemplate(segs[1])
				return
			case m == http.MethodDelete:
				q.handleDeleteTemplate(segs[1])
				return
			}
		}
	case "_data_stream":
		switch {
		case get && len(segs) <= 2:
			name := "*"
			if len(segs) == 2 {
				name = segs[1]
			}
			q.handleGetDataStream(name)
			return
		case post && len(segs) == 2:
			q.handleCreateDataStream(segs[1])
			return
		case m == http.MethodDelete && len(segs) == 2:
			q.handleDeleteDataStream(segs[1])
			return
		}
	case "_search":
		if len(segs) == 1 && (get || m == http.MethodPost) {
			q.handleSearch("")
			return
		}
		if len(segs) >= 2 && segs[1] == "point_in_time" {
			if m == http.MethodDelete {
				q.handleDeletePIT(len(segs) == 3 && segs[2] == "_all")
				return
			}
			if get && len(segs) == 3 && segs[2] == "_all" {
				q.handleListPIT()
				return
			}
		}
	case "_count":
		if len(segs) == 1 && (get || m == http.MethodPost) {
			q.handleCount("")
			return
		}
	case "_refresh", "_flush":
		if len(segs) == 1 && (get || m == http.MethodPost) {
			q.handleRefresh("")
			return
		}
	default:
		if strings.HasPrefix(segs[0], "_") {
			break
		}
		q.routeIndex(segs)
		return
	}
	q.noHandler()
}

func (q *request) routeIndex(segs []string) {
	m := q.r.Method
	get := m == http.MethodGet || m == http.MethodHead
	post := m == http.MethodPost || m == http.MethodPut
	index := segs[0]
	if len(segs) == 1 {
		switch {
		case m == http.MethodPut:
			q.handleCreateIndex(index)
		case m == http.MethodDelete:
			q.handleDeleteIndex(index)
		case get:
			q.handleGetIndex(index)
		default:
			q.noHandler()
		}
		return
	}
	switch segs[1] {
	case "_bulk":
		if post && len(segs) == 2 {
			q.handleBulk(index)
			return
		}
	case "_doc", "_create":
		if len(segs) == 3 {
			switch {
			case get && segs[1] == "_doc":
				q.handleGetDoc(index, segs[2])
				return
			case post:
				q.handleIndexDoc(index, segs[2], segs[1] == "_create")
				return
			case m == http.MethodDelete && segs[1] == "_doc":
				q.handleDeleteDoc(index, segs[2])
				return
			}
		}
		if len(segs) == 2 && m == http.MethodPost && segs[1] == "_doc" {
			q.handleIndexDoc(index, "", false)
			return
		}
	case "_search":
		if len(segs) == 2 && (get || m == http.MethodPost) {
			q.handleSearch(index)
			return
		}
		if len(segs) == 3 && segs[2] == "point_in_time" && m == http.MethodPost {
			q.handleCreatePIT(index)
			return
		}
	case "_count":
		if len(segs) == 2 && (get || m == http.MethodPost) {
			q.handleCount(index)
			return
		}
	case "_refresh", "_flush":
		if len(segs) == 2 && (get || m == http.MethodPost) {
			q.handleRefresh(index)
			return
		}
	case "_search_shards":
		if len(segs) == 2 && (get || m == http.MethodPost) {
			q.handleSearchShards(index)
			return
		}
	case "_rollover":
		if len(segs) == 2 && m == http.MethodPost {
			q.handleRollover(index)
			return
		}
	case "_split", "_shrink":
		if len(segs) == 3 && post {
			q.handleResize(index, segs[2], segs[1] == "_split")
			return
		}
	case "_settings":
		if len(segs) == 2 && m == http.MethodPut {
			q.handlePutSettings(index)
			return
		}
		if len(segs) == 2 && get {
			q.handleGetIndex(index)
			return
		}
	case "_stats":
		if get && len(segs) <= 3 {
			q.handleIndexStats(index)
			return
		}
	case "_mapping":
		if len(segs) == 2 && m == http.MethodPut {
			q.reply(200, []byte(`{"acknowledged":true}`))
			return
		}
		if len(segs) == 2 && get {
			q.handleGetMapping(index)
			return
		}
	}
	q.noHandler()
}

func (q *request) noHandler() {
	q.reply(400, []byte(`{"error":"no handler found for uri [`+strings.ReplaceAll(q.r.URL.RequestURI(), `"`, `\"`)+`] and method [`+q.r.Method+`]"}`))
}
