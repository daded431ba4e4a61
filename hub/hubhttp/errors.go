package hubhttp

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/hubd/hubd/hub/hubgrpc"
	"github.com/hubd/hubd/hubpb"
	"github.com/hubd/hubd/session"
)

// jsonForm is the gateway's marshaler: messages go out in the one JSON
// form (hubpb.MarshalJSON); requests are read by protojson, which takes
// proto or lowerCamel names and refuses unknown fields.
type jsonForm struct{ runtime.JSONPb }

func newJSONForm() *jsonForm {
	return &jsonForm{runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true},
		UnmarshalOptions: protojson.UnmarshalOptions{},
	}}
}

// Marshal implements runtime.Marshaler.
func (j *jsonForm) Marshal(v any) ([]byte, error) {
	if m, ok := v.(proto.Message); ok {
		return hubpb.MarshalJSON(m)
	}
	return j.JSONPb.Marshal(v)
}

// statusOf turns an error into a status carrying a hubd ErrorInfo: a hub
// error by its stable reason and hubgrpc's table of codes; a status as it
// is, given the reason its code stands for when it has none (a body that
// does not parse is MALFORMED); anything else INTERNAL, its text withheld.
func statusOf(err error) *status.Status {
	if r, ok := session.ReasonOf(err); ok {
		return withInfo(status.New(hubgrpc.Code(r), session.Detail(err)), r)
	}
	switch {
	case errors.Is(err, context.Canceled):
		return withInfo(status.New(codes.Canceled, err.Error()), hubpb.Reason_CANCELED)
	case errors.Is(err, context.DeadlineExceeded):
		return withInfo(status.New(codes.DeadlineExceeded, err.Error()), hubpb.Reason_DEADLINE_EXCEEDED)
	}
	st, ok := status.FromError(err)
	if !ok {
		return withInfo(status.New(codes.Internal, "internal error (logged by the hub)"), hubpb.Reason_INTERNAL)
	}
	if reasonOf(st) != "" {
		return st
	}
	switch st.Code() {
	case codes.InvalidArgument:
		return withInfo(st, hubpb.Reason_MALFORMED)
	case codes.Unauthenticated:
		return withInfo(st, hubpb.Reason_UNAUTHENTICATED)
	case codes.Canceled:
		return withInfo(st, hubpb.Reason_CANCELED)
	case codes.DeadlineExceeded:
		return withInfo(st, hubpb.Reason_DEADLINE_EXCEEDED)
	}
	return st
}

// reasonOf returns the hubd reason a status carries, or "".
func reasonOf(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == hubgrpc.Domain {
			return info.GetReason()
		}
	}
	return ""
}

func withInfo(st *status.Status, r hubpb.Reason) *status.Status {
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: r.String(), Domain: hubgrpc.Domain}); err == nil {
		return d
	}
	return st
}

// writeError answers err as a google.rpc.Status in the one JSON form,
// with the HTTP status grpc-gateway maps its code to. It is the gateway's
// error handler too, so every refusal of the HTTP side looks the same.
func writeError(w http.ResponseWriter, err error) {
	writeErrorAs(w, err, 0)
}

// writeErrorAs is writeError with an HTTP status of its own (0: the one
// grpc-gateway maps the code to).
func writeErrorAs(w http.ResponseWriter, err error, httpStatus int) {
	st := statusOf(err)
	body, merr := hubpb.MarshalJSON(st.Proto())
	if merr != nil {
		body = []byte(`{"code":13,"message":"the error could not be encoded"}`)
	}
	h := w.Header()
	h.Del("Trailer")
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	if st.Code() == codes.Unauthenticated {
		h.Set("WWW-Authenticate", `Bearer realm="hubd"`)
	}
	if httpStatus == 0 {
		httpStatus = runtime.HTTPStatusFromCode(st.Code())
		if reasonOf(st) == hubpb.Reason_TOO_LARGE.String() {
			httpStatus = http.StatusRequestEntityTooLarge // not 429: too large is not too many
		}
	}
	w.WriteHeader(httpStatus)
	w.Write(body)
}

// jsonBodies refuses a request whose body is not declared JSON (415,
// MALFORMED): the JSON API reads nothing else, and a body a page of
// another site can send without asking (text/plain, a form) must not
// pass for JSON. A request without a body needs no Content-Type.
func jsonBodies(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		ct := r.Header.Get("Content-Type")
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			said := fmt.Sprintf("Content-Type %.80q", ct)
			if ct == "" {
				said = "a body without a Content-Type"
			}
			writeErrorAs(w, fmt.Errorf("%s: the JSON API reads bodies sent as application/json only: %w", said, session.ErrMalformed),
				http.StatusUnsupportedMediaType)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// fail answers a refused request, logging an error that carries no
// reason (a bug) once, here.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	if _, ok := session.ReasonOf(err); !ok {
		if _, isStatus := status.FromError(err); !isStatus && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			a.lg.Error().Err(err).Str("method", r.Method).Str("path", r.URL.Path).Msg("internal error")
		}
	}
	writeError(w, err)
}

// Fail answers a refused request as the JSON API does (a google.rpc.Status
// with the stable reason), for handlers mounted beside it such as the web
// view.
func (a *API) Fail(w http.ResponseWriter, r *http.Request, err error) { a.fail(w, r, err) }

// gatewayError is fail as the gateway's runtime.ErrorHandlerFunc.
func (a *API) gatewayError(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	a.fail(w, r, err)
}

// routingError answers a path or method the API does not have.
func routingError(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, code int) {
	switch code {
	case http.StatusNotFound:
		writeError(w, status.Errorf(codes.NotFound, "no route %s %s", r.Method, r.URL.Path))
	case http.StatusMethodNotAllowed:
		writeError(w, status.Errorf(codes.Unimplemented, "%s is not allowed on %s", r.Method, r.URL.Path))
	default:
		writeError(w, status.Error(codes.InvalidArgument, http.StatusText(code)))
	}
}
