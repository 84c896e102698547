package opensearchrouted

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"go.opentelemetry.io/collector/config/configcompression"
)

var gzipReaders sync.Pool

// gunzipLines reads a gzip body of length bytes from br and counts the
// newlines of its decompressed content.
func gunzipLines(br *bufio.Reader, length int, buf []byte) (int, error) {
	lr := io.LimitReader(br, int64(length))
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(lr)
	} else {
		err = zr.Reset(lr)
	}
	if err != nil {
		return 0, err
	}
	defer gzipReaders.Put(zr)
	lines := 0
	for {
		k, err := zr.Read(buf)
		lines += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	_, err = io.Copy(io.Discard, lr)
	return lines, err
}

// selfSignedCA writes a self-signed CA certificate, also valid as a server
// certificate for 127.0.0.1, into a temporary file, and returns it.
func selfSignedCA(tb testing.TB, cn string) (der []byte, key *ecdsa.PrivateKey, file string) {
	key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	file = filepath.Join(tb.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return der, key, file
}

// benchTLS is a server certificate for 127.0.0.1 and the CA file that
// verifies it.
func benchTLS(b *testing.B) (*tls.Config, string) {
	der, key, ca := selfSignedCA(b, "bench")
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, ca
}

// BenchmarkPushLogsTLS is the full push path (BenchmarkPushLogs) over TLS
// with basic auth (username/password), on the exporter's own transport and
// on the collector's (bulk.transport: confighttp), without and with gzip:
// cpu-ns/record (the whole process, the in-process servers' TLS and gunzip
// included) and wire-bytes/record (the _bulk bodies as sent). own/gzip-N
// sets compression_params.level N on the own transport (the default level
// is bulk.DefaultGzipLevel; confighttp's is 6).
func BenchmarkPushLogsTLS(b *testing.B) {
	for _, v := range []struct {
		gz    bool
		level int
	}{{false, 0}, {true, 0}, {true, 6}} {
		for _, transport := range []string{TransportAuto, TransportConfighttp} {
			name := map[string]string{TransportAuto: "own", TransportConfighttp: "confighttp"}[transport]
			gz := v.gz
			switch {
			case v.level != 0 && transport != TransportAuto:
				continue
			case v.level != 0:
				name += "/gzip-" + strconv.Itoa(v.level)
			case gz:
				name += "/gzip"
			default:
				name += "/plain"
			}
			b.Run(name, func(b *testing.B) {
				serverTLS, ca := benchTLS(b)
				m := newMinimalClusterListen(b, 3, "bench", serverTLS)
				cfg := testConfig(m.urls())
				cfg.LogsIndex = "bench"
				cfg.TLS.CAFile = ca
				cfg.Username, cfg.Password = "exporter", "bench-password"
				cfg.Bulk.Transport = transport
				if gz {
					cfg.Compression = "gzip"
					cfg.CompressionParams.Level = configcompression.Level(v.level)
				}
				e, _ := startExporter(b, cfg, signalLogs)
				waitRouted(b, e, "bench")
				ld := makeLogs(0, benchPer)
				wire0 := m.wire.Load()
				benchPush(b, func(ctx context.Context) error { return e.pushLogs(ctx, ld) })
				b.ReportMetric(float64(m.wire.Load()-wire0)/float64(b.N+benchPer), "wire-bytes/record")
			})
		}
	}
}
