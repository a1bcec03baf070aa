package egress

import (
	"bufio"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWireMatchesCheckedURL (found by the red team; it guards the fix): for URLs the policy accepts (random
// pchar path args and query values, escapes included), the request-target
// net/http writes on the wire is byte for byte the checked path and query.
// (HTTP/1.1 over a raw listener; HTTP/2's :path is the same RequestURI.)
func TestWireMatchesCheckedURL(t *testing.T) {
	p := shippedOpPolicy(t, "github", "list_issues")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lines := make(chan string, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l, _ := bufio.NewReader(c).ReadString('\n')
			lines <- l
			c.Write([]byte("HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"))
			c.Close()
		}
	}()
	const alpha = "abcXYZ019-._~!$&'()*+,;=:@%"
	rnd := func(n int, extra string) string {
		a := alpha + extra
		var b strings.Builder
		for i := 0; i < n; i++ {
			c := a[rand.IntN(len(a))]
			if c == '%' {
				b.WriteString([]string{"%41", "%2e", "%00", "%25", "%7E", "%3f", "%23", "%20", "%c3%a9"}[rand.IntN(9)])
				continue
			}
			b.WriteByte(c)
		}
		return b.String()
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Second}
	checked := 0
	for i := 0; i < 3000 && checked < 400; i++ {
		rest := "/repos/" + rnd(1+rand.IntN(6), "") + "/" + rnd(1+rand.IntN(6), "") + "/issues"
		if rand.IntN(2) == 0 {
			rest += "?state=" + rnd(rand.IntN(8), "/?")
		}
		u := "https://api.github.com" + rest
		if p.checkURL(u) != "" {
			continue
		}
		checked++
		req, err := http.NewRequest("GET", "http://"+ln.Addr().String()+rest, nil)
		if err != nil {
			t.Fatalf("accepted %q, net/http refuses: %v", u, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%q: %v", u, err)
		}
		resp.Body.Close()
		line := <-lines
		want := "GET " + rest + " HTTP/1.1\r\n"
		if line != want {
			t.Errorf("accepted %q, wire sent %q", u, line)
		}
	}
	t.Logf("%d accepted URLs compared on the wire", checked)
}
