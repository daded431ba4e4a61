package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hubd/hubd/agentsdk"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/internal/exitcode"
)

// questionsCommand returns a questions command (see clientGroup).
func questionsCommand(name string, fs *flag.FlagSet, _ io.Reader) *clientCommand {
	switch name {
	case "list":
		return &clientCommand{run: questionsListFlags(fs)}
	case "answer":
		return &clientCommand{run: questionsAnswerFlags(fs), nargs: -2}
	}
	return nil
}

// questionsListFlags registers the filters of "questions list" and
// --output, and returns it: a table of the pending questions, or one
// PendingQuestion per line.
func questionsListFlags(fs *flag.FlagSet) subcommand {
	answerer := fs.String("answerer", "", "only the questions this `agent` must answer (an operator's choice; default: yours)")
	root := fs.String("root", "", "only the questions of this session's tree (`ID`)")
	out := outputFlags(fs, "the output `format`: table (for people: session, question, asker, answerer, asked, age, options, text) "+
		"or json (for programs: one PendingQuestion per line)", formatTable, formatJSON)
	return func(ctx context.Context, c *agentsdk.Client, _ *flag.FlagSet, w *bufio.Writer) error {
		qs, err := c.ListQuestions(ctx, *answerer, *root)
		if err != nil {
			return err
		}
		if out.json() {
			for _, pq := range qs {
				if err := writeJSON(w, pq); err != nil {
					return err
				}
			}
			return nil
		}
		now := time.Now()
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tQUESTION\tASKER\tANSWERER\tASKED\tAGE\tOPTIONS\tTEXT")
		for _, pq := range qs {
			e := pq.GetEnvelope()
			q := e.GetQuestion()
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", pq.GetSessionId(), q.GetQuestionId(), pq.GetAsker(), q.GetAnswerer(),
				timeCell(e.GetAcceptedAt()), ageCell(e.GetAcceptedAt(), now), optionsOf(q), oneLine(q.GetText()))
		}
		return tw.Flush()
	}
}

// optionsOf describes a question's choices: "yes|no", "yes|no (several)",
// "text", or "text (schema)".
func optionsOf(q *hubpb.Question) string {
	if len(q.GetOptions()) == 0 {
		if q.GetSchema() != nil {
			return "text (schema)"
		}
		return "text"
	}
	var ids []string
	for _, o := range q.GetOptions() {
		ids = append(ids, o.GetId())
	}
	if q.GetMultiple() {
		return strings.Join(ids, "|") + " (several)"
	}
	return strings.Join(ids, "|")
}

// oneLine keeps a text on one table line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		return string(r[:79]) + "…"
	}
	return s
}

// questionsAnswerFlags registers the flags of "questions answer" and
// returns it: the question is found among the caller's pending ones by its
// id (--session when two sessions have one of that id), then answered.
func questionsAnswerFlags(fs *flag.FlagSet) subcommand {
	text := fs.String("text", "", "a free-text `answer` (for a question without options, or with them)")
	sessionID := fs.String("session", "", "the question's session `ID`, when its id alone is ambiguous")
	answerer := fs.String("answerer", "", "answer for this `agent` (an operator; logged as the operator's)")
	out := outputFlags(fs, "the output `format`: text (a line in words) or json (the hub's acknowledgement, a SendResponse)", formatText, formatJSON)
	return func(ctx context.Context, c *agentsdk.Client, fs *flag.FlagSet, w *bufio.Writer) error {
		qid, options := fs.Arg(0), fs.Args()[1:]
		if len(options) == 0 && *text == "" {
			return exitcode.Usage("want OPTION ... or --text T")
		}
		id := *sessionID
		if id == "" {
			var err error
			if id, err = findQuestion(ctx, c, *answerer, qid); err != nil {
				return err
			}
		}
		ack, err := c.AnswerQuestion(ctx, id, &agentsdk.Answer{QuestionId: qid, OptionIds: options, Text: *text})
		if err != nil {
			return err
		}
		if out.json() {
			return writeJSON(w, ack.SendResponse)
		}
		fmt.Fprintf(w, "answered %s in %s at seq %d\n", qid, id, ack.GetSeq())
		return nil
	}
}

// findQuestion returns the session of the caller's (or answerer's)
// pending question qid.
func findQuestion(ctx context.Context, c *agentsdk.Client, answerer, qid string) (string, error) {
	qs, err := c.ListQuestions(ctx, answerer, "")
	if err != nil {
		return "", err
	}
	var ids, pending []string
	for _, pq := range qs {
		q := pq.GetEnvelope().GetQuestion()
		pending = append(pending, q.GetQuestionId())
		if q.GetQuestionId() == qid {
			ids = append(ids, pq.GetSessionId())
		}
	}
	switch len(ids) {
	case 0: // nothing to answer: refused as the hub would refuse it (exit 1)
		if len(pending) == 0 {
			return "", fmt.Errorf("no question %q is pending for you (none is; see hubd questions list)", qid)
		}
		return "", fmt.Errorf("no question %q is pending for you (pending: %s)", qid, strings.Join(pending, ", "))
	case 1:
		return ids[0], nil
	}
	// The command line does not say which: a usage mistake (exit 2).
	return "", exitcode.Usage("question %q is pending in %d sessions (%s): name one with --session", qid, len(ids), strings.Join(ids, ", "))
}
