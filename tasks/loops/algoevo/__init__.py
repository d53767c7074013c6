"""AlgoEvo (issue 14): design skills, experience trees and cross-task pattern promotion."""
