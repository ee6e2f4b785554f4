"""Twisted services composing the codecs, pure logic and adapters into runnable servers."""
