// Command writesbom writes the SPDX 2.3 document (JSON) of a built canaryd
// binary, from the build information Go recorded in it (internal/sbom).
// `make dist` runs it for every archive:
//
//	writesbom -name canaryd_v1.2.3_linux_amd64 -version v1.2.3 -commit SHA -o FILE BINARY
//
// The document's creation time is $SOURCE_DATE_EPOCH when set (make dist
// sets the release commit's time), so that a rebuild gives the same bytes.
package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/canaryd/canaryd/internal/sbom"
)

func main() {
	if err := run(os.Args[1:], os.Getenv, os.Stdout, time.Now); err != nil {
		fmt.Fprintln(os.Stderr, "writesbom:", err)
		os.Exit(1)
	}
}

func run(args []string, getenv func(string) string, stdout io.Writer, now func() time.Time) error {
	fs := flag.NewFlagSet("writesbom", flag.ContinueOnError)
	name := fs.String("name", "", "the document's name: the archive's, without .tar.gz (canaryd_VERSION_OS_ARCH)")
	version := fs.String("version", "", "the release's version, as -X main.version set it")
	commit := fs.String("commit", "", "the commit the binary was built from")
	out := fs.String("o", "", "write the document to this file instead of standard output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("want one argument: the binary")
	}
	path := fs.Arg(0)
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	var created time.Time
	if epoch := getenv("SOURCE_DATE_EPOCH"); epoch == "" {
		created = now()
	} else {
		sec, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since 1970", epoch)
		}
		created = time.Unix(sec, 0)
	}
	doc, err := sbom.SPDX(info, sbom.Binary{
		Name:     *name,
		FileName: filepath.Base(path),
		Version:  *version,
		Commit:   *commit,
		SHA256:   hex.EncodeToString(sum[:]),
		Created:  created,
		Tool:     "canaryd-writesbom-" + *version,
	})
	if err != nil {
		return err
	}
	j, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	j = append(j, '\n')
	if *out == "" {
		_, err = stdout.Write(j)
		return err
	}
	return os.WriteFile(*out, j, 0o644)
}
