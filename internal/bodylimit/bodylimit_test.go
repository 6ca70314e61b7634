package bodylimit_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"mailroom/internal/apierr"
	"mailroom/internal/bodylimit"
)

// serve runs a server whose handler reads the whole body and answers 200,
// or the limit's status; reading tells the test a handler has read the
// body's first byte, so the body holds its place.
func serve(t *testing.T, o bodylimit.Options) (addr string, reading chan struct{}) {
	t.Helper()
	reading = make(chan struct{}, 16)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var err error
		if r.Body != http.NoBody && r.ContentLength != 0 {
			if _, err = io.ReadFull(r.Body, make([]byte, 1)); err == nil {
				reading <- struct{}{}
			}
		}
		if err == nil {
			_, err = io.ReadAll(r.Body)
		}
		if err != nil {
			if e, ok := apierr.As(err); ok {
				w.WriteHeader(e.Status)
				fmt.Fprint(w, e.Code)
				return
			}
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, "ok")
	})
	srv := httptest.NewServer(bodylimit.New(o).Wrap(h))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String(), reading
}

// post sends a request's head announcing n body bytes and returns the
// connection, to trickle the body on.
func post(t *testing.T, addr, path string, n int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", path, n)
	return c
}

// status reads the answer's status code within d ("" when none came).
func status(c net.Conn, d time.Duration) string {
	c.SetReadDeadline(time.Now().Add(d))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return ""
	}
	return strings.Fields(line)[1]
}

// trickle writes a byte every gap until the server stops taking them.
func trickle(c net.Conn, gap time.Duration) {
	go func() {
		for {
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(gap)
		}
	}()
}

var opts = bodylimit.Options{Timeout: 300 * time.Millisecond, UploadTimeout: 3 * time.Second,
	Uploads: []string{"POST /upload"}, Max: 4, PerIP: 4}

// TestSlowBodyIsCut: a body trickled slower than the timeout is answered
// 408 request_timeout soon after the timeout, and the connection closed.
func TestSlowBodyIsCut(t *testing.T) {
	t.Parallel()
	addr, _ := serve(t, opts)
	c := post(t, addr, "/items", 1000)
	began := time.Now()
	trickle(c, 50*time.Millisecond)
	if got := status(c, 2*time.Second); got != "408" {
		t.Fatalf("answered %q, want 408", got)
	}
	if d := time.Since(began); d > time.Second {
		t.Fatalf("cut after %v, want about the 300 ms timeout", d)
	}
	// Closed: EOF, or a reset when the trickle's bytes arrive after the
	// close; only the read deadline says it stayed open.
	c.SetReadDeadline(time.Now().Add(time.Second))
	var ne net.Error
	if _, err := io.ReadAll(c); errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection stayed open: %v", err)
	}
}

// TestUploadRouteWaitsLonger: an upload route's body may take longer than
// the default timeout.
func TestUploadRouteWaitsLonger(t *testing.T) {
	t.Parallel()
	addr, _ := serve(t, opts)
	c := post(t, addr, "/upload", 8)
	for range 8 {
		c.Write([]byte("x"))
		time.Sleep(80 * time.Millisecond) // 640 ms in all, over the 300 ms default
	}
	if got := status(c, 2*time.Second); got != "200" {
		t.Fatalf("answered %q, want 200", got)
	}
}

// TestBodiesCapped: with the cap's bodies held open, one more is answered
// 503 at once, while a request without a body still answers; a place freed
// is taken again.
func TestBodiesCapped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    bodylimit.Options
	}{
		{"in all", bodylimit.Options{Timeout: 3 * time.Second, Max: 2, PerIP: 10}},
		{"per address", bodylimit.Options{Timeout: 3 * time.Second, Max: 10, PerIP: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr, reading := serve(t, tc.o)
			var slow []net.Conn
			for range 2 {
				c := post(t, addr, "/items", 10)
				c.Write([]byte("0")) // its first byte: the place is taken
				slow = append(slow, c)
				<-reading
			}
			began := time.Now()
			extra := post(t, addr, "/items", 10)
			if got := status(extra, time.Second); got != "503" {
				t.Fatalf("a third body answered %q, want 503", got)
			}
			res, err := http.Get("http://" + addr + "/items")
			if err != nil || res.StatusCode != 200 {
				t.Fatalf("GET: %v %v", res, err)
			}
			res.Body.Close()
			if d := time.Since(began); d > 500*time.Millisecond {
				t.Fatalf("the refusal and the GET took %v", d)
			}
			slow[0].Write([]byte("123456789"))
			if got := status(slow[0], time.Second); got != "200" {
				t.Fatalf("a held body, completed, answered %q", got)
			}
			again := post(t, addr, "/items", 1)
			again.Write([]byte("x"))
			if got := status(again, time.Second); got != "200" {
				t.Fatalf("after a place was freed, answered %q", got)
			}
		})
	}
}

// TestPlaceFreedWhenBodyIn: a handler that reads the announced length and
// then works on (io.ReadFull never sees EOF) holds no place meanwhile.
func TestPlaceFreedWhenBodyIn(t *testing.T) {
	t.Parallel()
	working, finish := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(r.Body, buf); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if string(buf) == "slow" {
			working <- struct{}{}
			<-finish
		}
	})
	srv := httptest.NewServer(bodylimit.New(bodylimit.Options{Timeout: time.Second, Max: 1, PerIP: 1}).Wrap(h))
	defer srv.Close()
	go http.Post(srv.URL, "text/plain", strings.NewReader("slow"))
	<-working
	res, err := http.Post(srv.URL, "text/plain", strings.NewReader("fast"))
	close(finish)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("a second body while the first's handler works: %v %v", res, err)
	}
	res.Body.Close()
}
