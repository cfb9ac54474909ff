// Command status_oracle runs Kubeflow Trainer's own status server (pkg/statusserver, the pinned
// module) on requests and prints what it answers and what it applies, one JSON line per request.
//
// Input (stdin): a JSON array of {"body": "<request body>", "authorized": bool}. Each request is
// POSTed over TLS to upstream's Server (NewServer + Start, an authorizer that answers
// "authorized"; its client records the status apply instead of sending it). Output: a JSON
// array of {"code": int, "response": <JSON answer>, "apply": <apply configuration or null>}.
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configapi "github.com/kubeflow/trainer/v2/pkg/apis/config/v1alpha1"
	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	"github.com/kubeflow/trainer/v2/pkg/statusserver"
	utiltesting "github.com/kubeflow/trainer/v2/pkg/util/testing"
)

type request struct {
	Body       string `json:"body"`
	Authorized bool   `json:"authorized"`
}

type result struct {
	Code     int             `json:"code"`
	Response json.RawMessage `json:"response"`
	Apply    json.RawMessage `json:"apply"`
}

type authorizer struct{ authorized *bool }

func (a authorizer) Init(context.Context) error { return nil }
func (a authorizer) Authorize(context.Context, string, string, string) (bool, error) {
	return *a.authorized, nil
}

// recorder is the fake client whose status writer records the apply configuration.
type recorder struct {
	client.Client
	applied *json.RawMessage
}

type statusRecorder struct {
	client.SubResourceWriter
	applied *json.RawMessage
}

func (r recorder) Status() client.SubResourceWriter {
	return statusRecorder{r.Client.Status(), r.applied}
}

func (s statusRecorder) Apply(_ context.Context, obj runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	*s.applied = b
	return nil
}

func selfSigned() tls.Certificate {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, _ := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, &key.PublicKey, key)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func freePort() int32 {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return int32(l.Addr().(*net.TCPAddr).Port)
}

func main() {
	var reqs []request
	if err := json.NewDecoder(os.Stdin).Decode(&reqs); err != nil {
		fmt.Fprintln(os.Stderr, "status_oracle:", err)
		os.Exit(2)
	}
	job := &trainer.TrainJob{ObjectMeta: metav1.ObjectMeta{Name: "test-job", Namespace: "default"}}
	fake := utiltesting.NewClientBuilder().WithObjects(job).WithStatusSubresource(job).Build()
	var applied json.RawMessage
	authorized := true
	port := freePort()
	srv, err := statusserver.NewServer(recorder{fake, &applied}, &configapi.StatusServer{Port: ptr.To(port)},
		&tls.Config{Certificates: []tls.Certificate{selfSigned()}}, authorizer{&authorized})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Start(ctx) }()
	httpc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	url := fmt.Sprintf("https://127.0.0.1:%d/apis/trainer.kubeflow.org/v1alpha1/namespaces/default/trainjobs/test-job/status", port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			break
		} else if time.Now().After(deadline) {
			panic(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	out := []result{}
	for _, r := range reqs {
		applied, authorized = nil, r.Authorized
		resp, err := httpc.Post(url, "application/json", bytes.NewReader([]byte(r.Body)))
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		res := result{Code: resp.StatusCode, Response: bytes.TrimSpace(body), Apply: applied}
		if res.Apply == nil {
			res.Apply = json.RawMessage("null")
		}
		out = append(out, res)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	_ = enc.Encode(out)
}
