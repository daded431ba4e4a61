package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/examples/internal/demo"
)

func main() { demo.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	m, err := modelFromEnv()
	if err != nil {
		return err
	}
	var topic string
	var maxTurns int
	full := []agentsdk.ServeOption{agentsdk.WithView(agentsdk.ViewFull, 0)}
	return demo.Run(ctx, "modelagents", args, stdout, stderr, demo.Scenario{
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&topic, "topic", "why a write-ahead log makes a multi-agent hub crash-safe", "what the writer writes about")
			fs.IntVar(&maxTurns, "max-turns", 6, "the safety cap on turns")
		},
		Timeout: 10 * time.Minute,
		Agents: []demo.Agent{
			{Name: "writer", Serve: full, Handle: m.agent("writer", func() string {
				return "You are a technical writer. Write or revise one short paragraph about " + topic +
					". Take the critic's notes into account. Answer with the paragraph only."
			}, nil)},
			{Name: "critic", Serve: full, Handle: m.agent("critic", func() string {
				return "You are a demanding editor. Give one concrete note on the writer's last paragraph, in one sentence. " +
					"If it needs no more work, answer APPROVED and nothing else."
			}, approve)},
		},
		Open: func(ctx context.Context, c *agentsdk.Client, labels map[string]string) (*agentsdk.Session, error) {
			g := agentsdk.NewGraph("writer").
				On(agentsdk.ContextEquals("approved", true), agentsdk.Terminate("approved")).
				On(agentsdk.FromSpeaker("writer"), agentsdk.ToAgent("critic")).
				On(agentsdk.FromSpeaker("critic"), agentsdk.ToAgent("writer")).
				WithMaxTurns(maxTurns)
			return c.Open(ctx, agentsdk.OpenOptions{Graph: g, Participants: agentsdk.Invited("critic"), Labels: labels})
		},
	})
}

// approve turns a critic's "APPROVED" into a packet that ends the loop.
func approve(answer string) agentsdk.Reply {
	if strings.HasPrefix(strings.TrimSpace(answer), "APPROVED") {
		return agentsdk.ReplyPacket(agentsdk.NewPacket("Approved.").Set("approved", true))
	}
	return agentsdk.ReplyText(answer)
}

// model is an OpenAI-compatible chat completions endpoint.
type model struct {
	url, key, name string
}

func modelFromEnv() (model, error) {
	m := model{url: os.Getenv("HUBD_MODEL_URL"), key: os.Getenv("HUBD_MODEL_KEY"), name: os.Getenv("HUBD_MODEL")}
	if m.url == "" || m.name == "" {
		return m, errors.New("set HUBD_MODEL_URL (e.g. http://localhost:11434/v1) and HUBD_MODEL (and HUBD_MODEL_KEY if needed)")
	}
	m.url = strings.TrimSuffix(m.url, "/") + "/chat/completions"
	return m, nil
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// agent is a handler that asks the model, with the system prompt and the
// session's transcript (its own turns as the assistant's), and replies with
// its answer (through shape, when given).
func (m model) agent(name string, system func() string, shape func(string) agentsdk.Reply) agentsdk.Handler {
	return func(ctx context.Context, t *agentsdk.Turn) (agentsdk.Reply, error) {
		msgs := []message{{Role: "system", Content: system()}}
		for _, it := range t.View.GetItems() {
			role := "user"
			if it.GetFrom() == name {
				role = "assistant"
			}
			msgs = append(msgs, message{Role: role, Content: fmt.Sprintf("%s: %s", it.GetFrom(), it.GetText())})
		}
		if len(t.View.GetItems()) == 0 {
			msgs = append(msgs, message{Role: "user", Content: "Begin."})
		}
		// The answer streams to the session's watchers as the model writes
		// it (deltas); the reply below is its final envelope.
		answer, err := m.complete(ctx, msgs, t.Stream(ctx))
		if err != nil {
			return agentsdk.Reply{}, err
		}
		if shape != nil {
			return shape(answer), nil
		}
		return agentsdk.ReplyText(answer), nil
	}
}

// complete asks for one chat completion, streamed: each piece of the
// answer is written to w as it comes. An endpoint that does not stream
// answers at once.
func (m model) complete(ctx context.Context, msgs []message, w io.Writer) (string, error) {
	body, err := json.Marshal(map[string]any{"model": m.name, "messages": msgs, "stream": true})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if m.key != "" {
		req.Header.Set("Authorization", "Bearer "+m.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return "", fmt.Errorf("%s: %s: %s", m.url, resp.Status, msg)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return readStream(resp.Body, w, m.url)
	}
	var out struct {
		Choices []struct {
			Message message `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return "", err
	}
	if len(out.Choices) == 0 {
		return "", fmt.Errorf("%s: no choices in the answer", m.url)
	}
	return strings.TrimSpace(out.Choices[0].Message.Content), nil
}

// readStream reads a streamed chat completion (server-sent events of
// chunks, "data: [DONE]" last), writing each piece of content to w, and
// returns the whole answer.
func readStream(r io.Reader, w io.Writer, url string) (string, error) {
	var all strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			return strings.TrimSpace(all.String()), nil
		}
		var chunk struct {
			Choices []struct {
				Delta message `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return "", fmt.Errorf("%s: a chunk of the stream: %w", url, err)
		}
		for _, c := range chunk.Choices {
			if c.Delta.Content == "" {
				continue
			}
			all.WriteString(c.Delta.Content)
			if _, err := io.WriteString(w, c.Delta.Content); err != nil {
				return "", err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s: the stream ended before [DONE]", url)
}
