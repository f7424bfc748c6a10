import { render } from 'preact';
import { App } from './app';
import { startLiveEvents } from './lib/events';
import './lib/overview-store';
import './styles.css';

startLiveEvents();
render(<App />, document.getElementById('app')!);
