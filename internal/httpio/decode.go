// Package httpio holds what every HTTP caller of the cluster needs alike:
// decoding answers compressed for a user's Accept-Encoding header, and
// telling TLS failures apart.
package httpio

import (
	"compress/gzip"
	"compress/zlib"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Answers compressed on request: a user header "Accept-Encoding: gzip"
// (the collector's headers setting) makes OpenSearch compress its answers,
// and Go's HTTP transport then leaves them compressed (it decompresses only
// what it asked for itself). DecodeBody undoes it, for the _bulk answers
// of both transports (internal/bulk) and for the discovery calls
// (internal/routing).

// DecodeBody replaces resp.Body with its decoded form when the answer has
// a Content-Encoding: gzip (or x-gzip) and deflate (zlib) are understood,
// identity is nothing to do. Any other encoding is an error naming it
// (resp.Body is then left as it is, for the caller to close). The decoded
// body reads lazily (an empty body is not an error until read) and its
// Close closes the original.
func DecodeBody(resp *http.Response) error {
	enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding")))
	var kind int
	switch enc {
	case "", "identity":
		return nil
	case "gzip", "x-gzip":
		kind = encGzip
	case "deflate":
		kind = encDeflate
	default:
		return fmt.Errorf("the answer has Content-Encoding %q, which the exporter cannot decode: remove Accept-Encoding from the headers setting or set it to gzip", enc)
	}
	resp.Body = &decodedBody{rc: resp.Body, kind: kind}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
	return nil
}

const (
	encGzip = iota + 1
	encDeflate
)

var gzipReaders sync.Pool // *gzip.Reader

type decodedBody struct {
	rc   io.ReadCloser
	kind int
	zr   io.Reader // nil until the first Read
	err  error
}

func (d *decodedBody) Read(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	if d.zr == nil {
		switch d.kind {
		case encGzip:
			var err error
			if z, ok := gzipReaders.Get().(*gzip.Reader); ok {
				if err = z.Reset(d.rc); err == nil {
					d.zr = z
				}
			} else if z, err = gzip.NewReader(d.rc); err == nil {
				d.zr = z
			}
			if err != nil {
				d.err = fmt.Errorf("decoding the gzip answer: %w", noEOF(err))
				return 0, d.err
			}
		case encDeflate:
			z, err := zlib.NewReader(d.rc)
			if err != nil {
				d.err = fmt.Errorf("decoding the deflate answer: %w", noEOF(err))
				return 0, d.err
			}
			d.zr = z
		}
	}
	n, err := d.zr.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("decoding the %s answer: %w", [...]string{"", "gzip", "deflate"}[d.kind], noEOF(err))
	}
	if err != nil {
		d.err = err
	}
	return n, err
}

// noEOF turns a bare EOF inside a compressed stream into ErrUnexpectedEOF:
// the answer was cut short.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

func (d *decodedBody) Close() error {
	err := d.rc.Close()
	switch z := d.zr.(type) {
	case *gzip.Reader:
		if d.err == io.EOF {
			gzipReaders.Put(z)
		}
	case io.Closer:
		_ = z.Close()
	}
	d.zr, d.err = nil, errors.New("httpio: read after Close")
	return err
}

// IsTLS reports whether err is a TLS failure: a certificate that does not
// verify, a handshake alert, a peer that does not speak TLS.
func IsTLS(err error) bool {
	var (
		cv  *tls.CertificateVerificationError
		rh  tls.RecordHeaderError
		al  tls.AlertError
		ua  x509.UnknownAuthorityError
		hn  x509.HostnameError
		inv x509.CertificateInvalidError
	)
	return errors.As(err, &cv) || errors.As(err, &rh) || errors.As(err, &al) ||
		errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &inv)
}
