// Package instant reads the points in time a caller gives a backtest's
// window in: RFC 3339, Unix seconds, or a duration relative to now
// ("-24h"). The command line (canaryd backtest --start, --end) and the HTTP
// API (POST /v1/backtests?start=&end=) read them with the same rules and
// the same messages.
//
// What it must not do: know what the instants are for (the window's rules,
// such as end after start, are its callers').
package instant
