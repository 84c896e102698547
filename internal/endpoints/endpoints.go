// Package endpoints holds what the exporter's and the receiver's
// configurations share about the cluster's seed URLs.
package endpoints

import (
	"fmt"
	"net/url"
)

// Seeds returns the configured seed URLs: endpoints, else the single
// endpoint, else none.
func Seeds(endpoint string, endpoints []string) []string {
	if len(endpoints) > 0 {
		return endpoints
	}
	if endpoint != "" {
		return []string{endpoint}
	}
	return nil
}

// Validate checks the `endpoint` / `endpoints` keys; every error names the
// key and never shows credentials.
func Validate(endpoint string, endpoints []string) []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	seeds := Seeds(endpoint, endpoints)
	if len(seeds) == 0 {
		add("endpoints: at least one endpoint is required (endpoints: [http://host:9200] or endpoint: http://host:9200)")
	}
	if len(endpoints) > 0 && endpoint != "" {
		add("endpoint and endpoints: set one of them, not both")
	}
	scheme := ""
	for _, s := range seeds {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			if u != nil && u.User != nil {
				add("endpoints: an endpoint is not an http:// or https:// URL")
			} else {
				add("endpoints: %q is not an http:// or https:// URL", s)
			}
			continue
		}
		if u.User != nil {
			redacted := *u
			redacted.User = nil
			add("endpoints: %q carries credentials in the URL; use an auth extension or headers", redacted.String())
		}
		if scheme != "" && u.Scheme != scheme {
			add("endpoints: all endpoints must use the same scheme (found %s and %s)", scheme, u.Scheme)
		}
		scheme = u.Scheme
	}
	return errs
}
