package analyses

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestLogArgs checks that an analysis' arguments are logged as zap.Any
// logs a map: an object of them, by name.
func TestLogArgs(t *testing.T) {
	enc := zapcore.NewJSONEncoder(zapcore.EncoderConfig{})
	for _, c := range []struct {
		args map[string]string
		want string
	}{
		{map[string]string{"b": "2", "a": `"1"`}, `{"args":{"a":"\"1\"","b":"2"}}` + "\n"},
		{nil, `{"args":{}}` + "\n"},
	} {
		buf, err := enc.EncodeEntry(zapcore.Entry{}, []zap.Field{zap.Object("args", logArgs(c.args))})
		if err != nil {
			t.Fatal(err)
		}
		if got := buf.String(); got != c.want {
			t.Errorf("%v logged as %s, want %s", c.args, got, c.want)
		}
	}
}
