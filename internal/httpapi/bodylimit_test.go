package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

// TestSlowBodyAnswered408: a node cuts a body trickled slower than
// MAILROOM_HTTP_BODY_TIMEOUT with 408 request_timeout in the route's error
// shape (nested on /v1/domains), and closes the connection.
func TestSlowBodyAnswered408(t *testing.T) {
	a := testapp.Start(t, testapp.WithEnv("MAILROOM_HTTP_BODY_TIMEOUT", "1s"))
	c, err := net.Dial("tcp", a.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	began := time.Now()
	fmt.Fprintf(c, "POST /v1/domains HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", a.Key)
	go func() {
		for {
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusRequestTimeout || body.Error.Code != "request_timeout" || !res.Close {
		t.Fatalf("answered %d %+v (close %v), want 408 request_timeout and a close", res.StatusCode, body, res.Close)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Fatalf("cut after %v with a 1 s timeout", d)
	}
}
