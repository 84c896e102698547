package opensearchrouted

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// BenchmarkDeliveryRaw: the same bodies as DeliveryFloor, written by hand
// over kept TCP connections (headers and body in one writev), the answer
// read and dropped; in the same run, DeliveryFloor's net/http client.
func BenchmarkDeliveryRaw(b *testing.B) {
	e, m := benchExporterCluster(b, signalLogs, true)
	c := e.getCall()
	e.encodeLogs(c, makeLogs(0, benchPer))
	byNode := map[string][]byte{}
	for it := range int32(c.batch.Len()) {
		n := c.locs[it].node
		item := bytes.Replace(c.batch.Bytes(it), []byte(`"_index":"bench",`), nil, 1)
		byNode[n.URL()] = append(byNode[n.URL()], item...)
	}
	e.putCall(c)
	_ = m
	type sub struct {
		conn net.Conn
		br   *bufio.Reader
		head []byte
		body []byte
		host string
	}
	var subs []*sub
	for u, body := range byNode {
		host := strings.TrimPrefix(u, "http://")
		conn, err := net.Dial("tcp", host)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		head := []byte("POST /bench/_bulk?filter_path=errors HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/x-ndjson\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
		subs = append(subs, &sub{conn: conn, br: bufio.NewReaderSize(conn, 64<<10), head: head, body: body, host: host})
	}
	post := func(s *sub) error {
		bufs := net.Buffers{s.head, s.body}
		if _, err := bufs.WriteTo(s.conn); err != nil {
			return err
		}
		resp, err := http.ReadResponse(s.br, nil)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return err
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i += benchPer {
		var wg sync.WaitGroup
		errs := make([]error, len(subs))
		for k, s := range subs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[k] = post(s)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/record")
}
