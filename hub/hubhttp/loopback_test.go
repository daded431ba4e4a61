package hubhttp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hub/hubhttp"
)

// TestDevNameOnlyFromLoopback: in development mode the X-Hubd-Agent header
// and sign-in by name count only from a loopback address.
func TestDevNameOnlyFromLoopback(t *testing.T) {
	srv := start(t, false)
	svc := hubgrpc.New(srv.Hub(), srv.Feed(), hubgrpc.Config{Auth: hubgrpc.Authenticator{Dev: true, Operators: []string{"operator"}}})
	api, err := hubhttp.New(hubhttp.Config{Feed: srv.Feed(), Service: svc, Authenticate: svc.UnaryInterceptor,
		Interceptors: []grpc.UnaryServerInterceptor{svc.UnaryInterceptor}, Dev: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from string
		want int
	}{
		{"127.0.0.1:5555", http.StatusOK},
		{"[::1]:5555", http.StatusOK},
		{"192.0.2.7:5555", http.StatusUnauthorized},
		{"[2001:db8::1]:5555", http.StatusUnauthorized},
	} {
		req := httptest.NewRequest("GET", "/v1/sessions", nil)
		req.RemoteAddr = tc.from
		req.Header.Set(hubgrpc.AgentHeader, "alice")
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("from %s: %d %s, want %d", tc.from, rec.Code, rec.Body, tc.want)
		}
		signin := httptest.NewRequest("POST", "/v1/auth/signin", strings.NewReader(`{"agent":"alice"}`))
		signin.Header.Set("Content-Type", "application/json")
		signin.RemoteAddr = tc.from
		rec = httptest.NewRecorder()
		api.ServeHTTP(rec, signin)
		if rec.Code != tc.want || (tc.want != 200) != (rec.Header().Get("Set-Cookie") == "") {
			t.Errorf("sign-in by name from %s: %d %v", tc.from, rec.Code, rec.Header())
		}
	}
}
