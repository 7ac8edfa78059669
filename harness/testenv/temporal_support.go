package testenv

import (
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
)

func describeNamespaceRequest(ns string) *workflowservice.DescribeNamespaceRequest {
	return &workflowservice.DescribeNamespaceRequest{Namespace: ns}
}

func listSearchAttributesRequest(ns string) *operatorservice.ListSearchAttributesRequest {
	return &operatorservice.ListSearchAttributesRequest{Namespace: ns}
}

// quietLogger drops the SDK's logs in tests.
type quietLogger struct{}

func (quietLogger) Debug(string, ...interface{}) {}
func (quietLogger) Info(string, ...interface{})  {}
func (quietLogger) Warn(string, ...interface{})  {}
func (quietLogger) Error(string, ...interface{}) {}
