"""What the API server's admission plugins do to an object before kube-scheduler sees it, each
transcribed from its upstream plugin: applied to what a controller or a file creates, never to the
objects of a dump (they went through admission already)."""
