// Package templates serves the named templates of `canaryd serve
// --templates DIR`: the Argo Rollouts AnalysisTemplate and
// ClusterAnalysisTemplate documents of a directory, by metadata.name, kept
// current as the directory changes.
//
// # The directory
//
// The top level of DIR is read: every *.yaml, *.yml and *.json file, or
// symbolic link to one; entries whose names start with a dot are skipped.
// In Kubernetes DIR is a mounted ConfigMap, whose keys are links
// `name.yaml -> ..data/name.yaml` and whose `..data` link the kubelet swaps
// atomically to a new timestamped directory on every update. When DIR has a
// `..data` entry, the files are read from the directory it points to, so
// that one scan sees one version of the whole ConfigMap, never half of an
// update.
//
// A YAML file may hold several documents separated by `---` lines, as
// kubectl reads them; each is a template. Documents of other kinds (a
// Rollout or an AnalysisRun kept in the same ConfigMap) are skipped with a
// log line. A bare spec, or a document without a kind, is an error: it has
// no name to be served by; so is a `kind: List`, which would hide the
// templates in its items.
//
// # Validation at load
//
// A template is validated when it is loaded: parsed (spec.Parse), resolved,
// validated and its conditions compiled (compile.Compile, without providers),
// then handed to Options.Check, with which the server checks providers
// (the address allow-list). The server's providers read no credentials
// here (--credentials-dir): each analysis of a template reads them, so
// that a template loaded before its Secret exists runs once it does. Its name must be a Kubernetes object name,
// unique across the directory: files are taken in name order and a name
// already held by an earlier file is an error for the later one.
//
// A template may have required arguments, supplied per request, without
// which spec.Resolve fails (`argument "x" was not supplied`). At load each
// of them (no value, or only a valueFrom) is given a placeholder value,
// "canaryd_placeholder_NAME" (spec.Placeholder), chosen to be invalid
// wherever a number, a duration, a URL or an expression is expected, and
// to be one name in a query. Then
//   - problems of resolution (a tag naming no declared argument, an
//     unclosed "{{") are reported, all of them, with every other problem:
//     no value causes them;
//   - a PromQL field (a Prometheus query, a judge's queries) is parsed as
//     Prometheus parses it, each placeholder tried as a name and as a
//     number (a value outside quotes is one or the other): a query that
//     parses with none of them is refused, whatever the arguments;
//   - any other problem on a field whose text uses a placeholder argument, or on a
//     field that contains or is contained in one, is dropped: it may be the
//     placeholder's doing. A count or limit that uses one is invalid on
//     its own, so spec.Validate compares it with no other field (count
//     against failureLimit, say), and no problem elsewhere comes from it;
//   - the dryRun and measurementRetention rules match metric names: when a
//     metric name uses a placeholder argument, their problems are dropped;
//   - every other problem is reported.
//
// The limit: a field that uses a required argument is checked only when a
// request supplies the value, and then a bad value is that request's 400.
// A field that no value could make valid (`count: "x{{args.n}}"`) loads,
// and every request that uses it is refused.
//
// # Reloading
//
// Reload scans the directory and loads the files whose content changed:
// changes are found by SHA-256 of the content, not by modification time,
// which a ConfigMap's links do not change. Run calls Reload every
// PollInterval (there is no inotify: a mounted ConfigMap changes through
// symlink swaps that file watchers follow badly); the server also calls it
// on SIGHUP.
//
// The file is the unit of change. A file whose documents all load replaces
// what the file served before. A file with a broken document changes
// nothing that is served: the last good version of the whole file stays,
// listed with status "stale" and the current errors, and the failure is
// logged and counted in canaryd_template_load_errors_total{file}. A broken
// file that was never good (at start, or a new file) serves the documents
// of it that load, and lists the others with status "error". A removed
// file's templates are removed.
//
// Get and List read an immutable snapshot that each reload replaces whole,
// so they are safe during a reload and never block on one.
//
// # Checking without serving
//
// CheckDir and CheckFile run the same checks on a directory or on one
// file's content, without a Store: `canaryd validate` uses them, so that
// it accepts exactly what `serve --templates` loads. Their CheckOptions.Args
// give arguments the values a request would, in place of placeholders.
//
// # What the package must not do
//
// It must not run analyses, speak HTTP or reach Prometheus: it turns a
// directory into checked, named documents. Running them, and checking the
// arguments of a request (MissingArgs, then compile.Compile), is the server's.
// It keeps no package-level state: the logger, the metrics registerer and
// the further checks come in Options.
package templates
