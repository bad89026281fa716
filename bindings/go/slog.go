package payretry

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// WithSlog sends every log line to l: one record per line, its message
// "payretry " + the line's event ("attempt", "lookup", "outcome", or a
// note), its time the line's "ts", its level the line's, and every other
// member (the "client" name among them) as an attribute
// in the line's order. Levels map to slog's: LogDebug to Debug, LogInfo to
// Info, LogWarn to Warn (an UNKNOWN outcome), LogError to Error. The lines
// are redacted by the library before they get here. It replaces WithLogger.
func WithSlog(l *slog.Logger) Option {
	return WithLogger(func(level int, line string) { logToSlog(l, level, line) })
}

// slogLevel maps a pay_log_level (10, 20, 30, 40) onto slog's (-4, 0, 4, 8).
func slogLevel(level int) slog.Level { return slog.Level((level - LogInfo) * 4 / 10) }

func logToSlog(l *slog.Logger, level int, line string) {
	ctx := context.Background()
	lv := slogLevel(level)
	if !l.Enabled(ctx, lv) {
		return
	}
	at, event, attrs, err := parseLogLine(line)
	if err != nil { // not a JSON object: the library's lines always are; keep it whole
		at, event, attrs = time.Now(), "line", []slog.Attr{slog.String("line", line)}
	}
	r := slog.NewRecord(at, lv, "payretry "+event, 0)
	r.AddAttrs(attrs...)
	_ = l.Handler().Handle(ctx, r)
}

// parseLogLine reads one log line's members in order.
func parseLogLine(line string) (time.Time, string, []slog.Attr, error) {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return time.Time{}, "", nil, errNotAnObject
	}
	at, event := time.Now(), ""
	var attrs []slog.Attr
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return time.Time{}, "", nil, err
		}
		key, _ := tok.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return time.Time{}, "", nil, err
		}
		switch s, isString := v.(string); {
		case key == "ts" && isString:
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				at = t
			}
		case key == "event" && isString:
			event = s
		case key == "level" && isString:
			// The record's own level says it; a second "level" attribute would
			// shadow it in every handler's output.
		default:
			attrs = append(attrs, slogAttr(key, v))
		}
	}
	return at, event, attrs, nil
}

var errNotAnObject = errors.New("not a JSON object")

func slogAttr(key string, v any) slog.Attr {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return slog.Int64(key, n)
		}
		if f, err := x.Float64(); err == nil {
			return slog.Float64(key, f)
		}
		return slog.String(key, string(x))
	case string:
		return slog.String(key, x)
	case bool:
		return slog.Bool(key, x)
	default: // null, an object or an array
		return slog.Any(key, x)
	}
}
