package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeModel is an OpenAI-compatible endpoint with scripted answers: the
// writer drafts, the critic asks for one change and then approves.
func fakeModel() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string    `json:"model"`
			Messages []message `json:"messages"`
			Stream   bool      `json:"stream"`
		}
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer k" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "m" || !req.Stream {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mine := 0
		for _, m := range req.Messages {
			if m.Role == "assistant" {
				mine++
			}
		}
		answer := fmt.Sprintf("Paragraph %d.", mine+1)
		if strings.Contains(req.Messages[0].Content, "editor") { // the critic
			answer = "APPROVED"
			if mine == 0 {
				answer = "Add an example."
			}
		}
		// Streamed, as OpenAI-compatible endpoints do with stream: a chunk
		// per word.
		w.Header().Set("Content-Type", "text/event-stream")
		for i, word := range strings.SplitAfter(answer, " ") {
			chunk := map[string]any{"choices": []any{map[string]any{"delta": map[string]string{"content": word}}}}
			if i == 0 {
				chunk = map[string]any{"choices": []any{map[string]any{"delta": message{Role: "assistant", Content: word}}}}
			}
			b, _ := json.Marshal(chunk)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
}

func TestModelAgents(t *testing.T) {
	m := fakeModel()
	defer m.Close()
	t.Setenv("HUBD_MODEL_URL", m.URL+"/v1/")
	t.Setenv("HUBD_MODEL", "m")
	t.Setenv("HUBD_MODEL_KEY", "k")
	var out, errs bytes.Buffer
	if err := run(context.Background(), []string{"--max-turns", "6", "--timeout", "20s"}, &out, &errs); err != nil {
		t.Fatalf("%v\n%s", err, errs.String())
	}
	want := `[4] writer: Paragraph 1.
[5] critic: Add an example.
[6] writer: Paragraph 2.
[7] critic: Approved. [set approved=true]
closed: approved
`
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestNoModel: without the environment the example says what to set.
func TestNoModel(t *testing.T) {
	t.Setenv("HUBD_MODEL_URL", "")
	var out, errs bytes.Buffer
	if err := run(context.Background(), nil, &out, &errs); err == nil || !strings.Contains(err.Error(), "HUBD_MODEL_URL") {
		t.Errorf("got %v", err)
	}
}
