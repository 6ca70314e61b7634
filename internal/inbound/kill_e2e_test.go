package inbound_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mailroom/internal/testkit/binary"
	"mailroom/internal/testkit/testdb"
)

// TestKill9LosesNoAcceptedMail: messages are sent over SMTP by four
// clients while the real binary is killed with SIGKILL; after a restart,
// every message that was answered 250 is there.
func TestKill9LosesNoAcceptedMail(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the binary")
	}
	bin := binary.Build(t)
	httpAddr, smtpAddr := binary.FreeAddr(t), binary.FreeAddr(t)
	env := []string{
		"MAILROOM_DATABASE_URL=" + testdb.URL(t),
		"MAILROOM_DATA_DIR=" + t.TempDir(),
		"MAILROOM_SECRET_KEY=kill-test-secret-key-0123456789",
		"MAILROOM_HTTP_ADDR=" + httpAddr,
		"MAILROOM_SMTP_ADDR=" + smtpAddr,
		"MAILROOM_SERVICE_DOMAIN=mailroom.test",
		"MAILROOM_LOG_LEVEL=warn",
	}
	var logs bytes.Buffer
	cmd := binary.Serve(t, bin, env, &logs)
	binary.WaitHealthy(t, httpAddr, 20*time.Second, &logs)

	create := exec.Command(bin, "workspace", "create", "--name", "Kill", "--owner-email", "k@example.com")
	create.Env = env
	out, err := create.Output()
	if err != nil {
		t.Fatalf("workspace create: %v %s", err, out)
	}
	var ws struct {
		APIKey string `json:"api_key"`
	}
	if err := json.Unmarshal(out, &ws); err != nil {
		t.Fatal(err)
	}
	get := func(path string, v any) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+httpAddr+path, nil)
		req.Header.Set("Authorization", "Bearer "+ws.APIKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		json.NewDecoder(resp.Body).Decode(v)
	}
	var boxes struct{ Mailboxes []struct{ Address string } }
	get("/v1/mailboxes", &boxes)
	inbox := boxes.Mailboxes[0].Address

	var mu sync.Mutex
	acked := map[string]bool{}
	killed := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for c := 0; c < 4; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-killed:
					return
				default:
				}
				id := fmt.Sprintf("k%d-%d@sender.example", c, i)
				raw := "From: a@sender.example\r\nSubject: kill " + id + "\r\nMessage-ID: <" + id + ">\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n" +
					strings.Repeat(strings.Repeat("body ", 20)+"\r\n", 20) + "\r\n--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=a.bin\r\n\r\n" + strings.Repeat(strings.Repeat("x", 99)+"\r\n", 200) + "--b--\r\n"
				if err := sendNoFatal(smtpAddr, "a@sender.example", []string{inbox}, raw); err != nil {
					select {
					case <-killed:
					default:
						t.Errorf("send before the kill: %v", err)
						cmd.Process.Signal(syscall.SIGKILL)
						once.Do(func() { close(killed) })
					}
					return
				}
				mu.Lock()
				acked[id] = true
				n := len(acked)
				mu.Unlock()
				if n == 60 {
					cmd.Process.Signal(syscall.SIGKILL)
					once.Do(func() { close(killed) })
				}
			}
		}()
	}
	wg.Wait()
	cmd.Wait()
	if t.Failed() {
		t.Fatalf("logs: %s", logs.String())
	}

	var logs2 bytes.Buffer
	binary.Serve(t, bin, env, &logs2)
	binary.WaitHealthy(t, httpAddr, 20*time.Second, &logs2)
	stored := map[string]bool{}
	cursor := ""
	for {
		var page struct {
			Messages []struct {
				MessageIDHeader string `json:"message_id_header"`
				Attachments     []struct{ Size int }
			}
			NextCursor *string `json:"next_cursor"`
		}
		get("/v1/messages?limit=100"+cursor, &page)
		for _, m := range page.Messages {
			stored[m.MessageIDHeader] = true
			if len(m.Attachments) != 1 || m.Attachments[0].Size != 20198 {
				t.Errorf("%s: attachments %+v", m.MessageIDHeader, m.Attachments)
			}
		}
		if page.NextCursor == nil {
			break
		}
		cursor = "&cursor=" + *page.NextCursor
	}
	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 60 {
		t.Fatalf("only %d acknowledged", len(acked))
	}
	for id := range acked {
		if !stored[id] {
			t.Errorf("%s was answered 250 and is gone after kill -9", id)
		}
	}
	t.Logf("%d acknowledged, %d stored", len(acked), len(stored))
}
